# SPDX-License-Identifier: GPL-3.0-or-later
# CPACK_PROJECT_CONFIG_FILE: read by cpack once per generator (CPACK_GENERATOR is then that one).
if(CPACK_GENERATOR STREQUAL "TGZ")
    # The relocatable AppDir: membudget-<version>-<arch>/{AppRun,usr/...}
    set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
    set(CPACK_PACKAGE_FILE_NAME "membudget-${CPACK_PACKAGE_VERSION}-${CPACK_MEMBUDGET_ARCH}")
    set(CPACK_INCLUDE_TOPLEVEL_DIRECTORY ON)
    set(CPACK_PRE_BUILD_SCRIPTS "${CPACK_MEMBUDGET_SOURCE_DIR}/packaging/cpack-appdir.cmake")
endif()
