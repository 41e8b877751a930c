# SPDX-License-Identifier: GPL-3.0-or-later
# Packages (included from the top-level CMakeLists.txt), from a Release build:
#   cpack -G DEB   membudget_<version>_amd64.deb, dependencies computed by dpkg-shlibdeps
#   cpack -G TGZ   membudget-<version>-x86_64.tar.gz, a relocatable AppDir: the programs under usr/,
#                  the non-system libraries and Qt plugins bundled, qt.conf, AppRun
#                  (packaging/bundle-appdir.sh; packaging/make-appdir.sh or the `appdir` target)
set(CPACK_PACKAGE_NAME "membudget")
set(CPACK_PACKAGE_VENDOR "MemBudget developers")
set(CPACK_PACKAGE_CONTACT "MemBudget developers <membudget@example.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "GPU memory-budget calculator for training and fine-tuning LLMs")
set(CPACK_PACKAGE_DESCRIPTION "Estimates the per-GPU memory of LLM training, fine-tuning and inference phase\n\
by phase (weights, gradients, optimizer states, activations, logits,\n\
overheads) and shows what bf16, checkpointing, flash attention, 8-bit\n\
optimizers, LoRA, QLoRA, offload and sharding buy. Desktop application\n\
(membudget-gui) and command line (membudget).")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_HOMEPAGE_URL ${PROJECT_HOMEPAGE_URL})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR "DEB;TGZ")
if(NOT MEMBUDGET_BUILD_GUI)
    set(CPACK_GENERATOR "DEB") # the AppDir needs membudget-gui
endif()
set(CPACK_STRIP_FILES ON)
set(CPACK_SOURCE_IGNORE_FILES "/\\\\.git/" "/build[^/]*/")

# Debian package. The dependencies come from dpkg-shlibdeps (the Qt platform and SVG plugins are in
# libqt6gui6 and libqt6svg6, which the programs link anyway).
set(CPACK_DEBIAN_PACKAGE_NAME "membudget")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "science")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE ${PROJECT_HOMEPAGE_URL})

# The AppDir tarball: per-generator settings live in packaging/cpack-options.cmake.
execute_process(COMMAND uname -m OUTPUT_VARIABLE CPACK_MEMBUDGET_ARCH OUTPUT_STRIP_TRAILING_WHITESPACE)
set(CPACK_MEMBUDGET_SOURCE_DIR ${PROJECT_SOURCE_DIR})
set(CPACK_MEMBUDGET_QT_PLUGIN_DIR "")
if(TARGET Qt6::Core AND DEFINED QT6_INSTALL_PREFIX AND DEFINED QT6_INSTALL_PLUGINS)
    set(CPACK_MEMBUDGET_QT_PLUGIN_DIR "${QT6_INSTALL_PREFIX}/${QT6_INSTALL_PLUGINS}")
endif()
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_SOURCE_DIR}/packaging/cpack-options.cmake)

include(CPack)

# cmake --build build --target deb | appdir: the packages into build/packages (like `package`, one
# generator each).
add_custom_target(deb
    COMMAND ${CMAKE_CPACK_COMMAND} --config ${CMAKE_BINARY_DIR}/CPackConfig.cmake -G DEB -B ${CMAKE_BINARY_DIR}/packages
    COMMENT "Building the .deb in ${CMAKE_BINARY_DIR}/packages"
    USES_TERMINAL VERBATIM)
add_custom_target(appdir
    COMMAND ${CMAKE_CPACK_COMMAND} --config ${CMAKE_BINARY_DIR}/CPackConfig.cmake -G TGZ -B ${CMAKE_BINARY_DIR}/packages
    COMMENT "Building the AppDir tarball in ${CMAKE_BINARY_DIR}/packages"
    USES_TERMINAL VERBATIM)
