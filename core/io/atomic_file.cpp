// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/atomic_file.h"

#include <cerrno>
#include <cstdint>
#include <random>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace membudget {

namespace {

std::string systemReason(int err)
{
    return std::generic_category().message(err);
}

std::string folderOf(const std::string &path)
{
    const std::size_t slash = path.rfind('/');
    if (slash == std::string::npos)
        return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::string baseNameOf(const std::string &path)
{
    const std::size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// ".<name>.tmp-<16 random hex digits>" beside the destination: hidden, unpredictable, and on the
// same file system so that rename(2) is atomic.
std::string temporaryName(const std::string &path)
{
    static thread_local std::mt19937_64 generator{[] {
        std::random_device device; // getrandom(2) on Linux
        return (static_cast<std::uint64_t>(device()) << 32) ^ device();
    }()};
    static const char digits[] = "0123456789abcdef";
    std::string suffix;
    std::uint64_t r = generator();
    for (int i = 0; i < 16; ++i, r >>= 4)
        suffix += digits[r & 15];
    const std::string folder = folderOf(path);
    return (folder == "/" ? std::string() : folder) + "/." + baseNameOf(path).substr(0, 200)
           + ".tmp-" + suffix;
}

bool writeAll(int fd, std::string_view bytes, int &err)
{
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            err = errno;
            return false;
        }
        done += static_cast<std::size_t>(n);
    }
    return true;
}

// Why `path` may not be replaced, or "" when it may (or does not exist yet).
std::string destinationProblem(const std::string &path, struct stat &st, bool &exists)
{
    exists = ::lstat(path.c_str(), &st) == 0;
    if (!exists)
        return errno == ENOENT ? std::string() : systemReason(errno);
    if (S_ISLNK(st.st_mode))
        return "it is a symbolic link (not followed: give the path of the file it points to)";
    if (S_ISDIR(st.st_mode))
        return "it is a folder";
    if (!S_ISREG(st.st_mode))
        return "it is not a regular file";
    if ((st.st_mode & 0222) == 0 || ::access(path.c_str(), W_OK) != 0)
        return "the file is read-only";
    return {};
}

} // namespace

bool writeFileAtomically(const std::string &path, std::string_view bytes, std::string &error)
{
    const auto fail = [&](const std::string &reason) {
        error = "cannot write " + path + ": " + reason;
        return false;
    };
    if (path.empty())
        return fail("no file name");
    struct stat old = {};
    bool exists = false;
    if (const std::string problem = destinationProblem(path, old, exists); !problem.empty())
        return fail(problem);

    std::string temporary;
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
        temporary = temporaryName(path);
        fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            return fail(systemReason(errno));
    }
    if (fd < 0)
        return fail("cannot create a temporary file beside it");
    const auto abandon = [&](int err) {
        ::close(fd);
        ::unlink(temporary.c_str());
        return fail(systemReason(err));
    };
    int err = 0;
    if (exists && ::fchmod(fd, old.st_mode & 07777) != 0)
        return abandon(errno);
    if (!writeAll(fd, bytes, err))
        return abandon(err);
    if (::fsync(fd) != 0)
        return abandon(errno);
    if (::close(fd) != 0) { // network file systems report late write errors here
        err = errno;
        ::unlink(temporary.c_str());
        return fail(systemReason(err));
    }
    if (::rename(temporary.c_str(), path.c_str()) != 0) {
        err = errno;
        ::unlink(temporary.c_str());
        return fail(systemReason(err));
    }
    // The rename itself is durable once the folder is synced (some file systems refuse: harmless).
    if (const int dir = ::open(folderOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        dir >= 0) {
        ::fsync(dir);
        ::close(dir);
    }
    return true;
}

} // namespace membudget
