// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The core's one way to write a file (the command line's outputs; the desktop app uses QSaveFile,
// or this where Qt cannot name the path).

#include <string>
#include <string_view>

namespace membudget {

// Writes `bytes` to `path` so that at every moment `path` is either the old file or the complete
// new one, never a mix or a truncation:
//  - the bytes go to a temporary file created exclusively (O_CREAT | O_EXCL | O_NOFOLLOW: never
//    through a link planted under its name) under an unpredictable name in the destination's folder;
//  - it gets the destination's permission bits when there is one (0666 less the umask otherwise);
//  - it is flushed to the disk (fsync), renamed over the destination, and the folder is synced.
// Refused, leaving everything as it was: a symbolic link at `path` (neither the link nor its
// target is replaced; write to the target's own path), a folder or other non-regular file, and a
// file without write permission (rename(2) would replace it regardless of its mode). On any failure
// the temporary file is removed, `path` is untouched and `error` gives the path and the system's
// reason: "cannot write out.yaml: No space left on device".
bool writeFileAtomically(const std::string &path, std::string_view bytes, std::string &error);

} // namespace membudget
