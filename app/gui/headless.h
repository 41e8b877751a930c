// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The command-line modes of membudget-gui that need no display:
//   membudget-gui --export SCENARIO.yaml -o OUT.(png|svg|pdf) [--width W] [--height H] [--scale S]
//                 [--title T] [--caption C] [--gib]
// and the fallback when there is no display at all (prints the default scenario's estimate and
// writes membudget-chart.png in the current directory).

#include "native_arguments.h"

#include <QStringList>

class QCommandLineParser;

namespace membudget {

// Exit codes shared with the membudget command line.
inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 1;
inline constexpr int kExitUsage = 2;

// True when argv asks for --export (checked before QApplication exists).
bool argvRequestsExport(int argc, char **argv);
// True when some display is available or a platform was chosen explicitly (-platform or
// QT_QPA_PLATFORM); false on a machine without DISPLAY and WAYLAND_DISPLAY.
bool displayAvailable(int argc, char **argv);

// Declares the options of membudget-gui.
void addCommandLineOptions(QCommandLineParser &parser);

// Runs --export with the parsed options (file names as `native` has their bytes); prints errors,
// prefixed "membudget export:", to stderr: exit 2 for a usage error, 1 for a file that cannot be
// read or written.
int runExport(const QCommandLineParser &parser, const NativeArguments &native);

// No display: estimate the default scenario, print its table, write membudget-chart.png.
int runWithoutDisplay();

} // namespace membudget
