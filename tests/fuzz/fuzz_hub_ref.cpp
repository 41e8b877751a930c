// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: what a user types as a Hugging Face model (id, hf: URI or page address). An
// accepted model must be a valid id and revision whose request and cache paths stay inside the
// model's own folder and which reads back the same from its own spelling; a refused one gets one
// printable line. See tests/fuzz/README.md.
#include "hub/hub_model_ref.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

[[noreturn]] void broken(const char *what, const std::string &detail)
{
    std::fprintf(stderr, "fuzz invariant broken: %s\n%s\n", what, detail.c_str());
    std::abort();
}

bool safePath(const std::string &path)
{
    if (path.find("/../") != std::string::npos || path.find("/./") != std::string::npos
        || path.rfind("../", 0) == 0 || path.find("//") != std::string::npos || path.empty()
        || path.front() == '/')
        return false;
    for (char c : path) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                        || c == '-' || c == '_' || c == '.' || c == '/' || c == '%';
        if (!ok)
            return false;
    }
    return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    using namespace membudget;
    const std::string text(reinterpret_cast<const char *>(data), size);
    std::string problem;
    const auto ref = parseHubModelRef(text, {"127.0.0.1:8080"}, problem);
    if (!ref) {
        if (problem.empty())
            broken("refused without a reason", text);
        for (char c : problem)
            if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7F)
                broken("a refusal that is not one printable line", problem);
        return 0;
    }
    if (!isValidHubRepoId(ref->repoId) || !isValidHubRevision(ref->revision))
        broken("accepted an invalid id or revision", ref->repoId + " @ " + ref->revision);
    if (!safePath(hubConfigPath(*ref)) || !safePath(hubCacheRelativePath("huggingface.co", *ref)))
        broken("a path that leaves the model's folder", hubConfigPath(*ref));
    const auto again = parseHubModelRef("hf:" + ref->toString(), {}, problem);
    if (!again || !(*again == *ref))
        broken("an accepted model does not read back from its own spelling", ref->toString());
    return 0;
}
