# SPDX-License-Identifier: GPL-3.0-or-later
# CPACK_PRE_BUILD_SCRIPTS for the TGZ generator: the staging folder holds usr/ as installed; turn
# it into an AppDir before cpack archives it.
set(appdir "${CPACK_TEMPORARY_DIRECTORY}")
if(NOT EXISTS "${appdir}/usr/bin/membudget")
    # Archive generators stage under <temporary directory>/<package file name> with the top folder.
    file(GLOB candidates LIST_DIRECTORIES true "${CPACK_TEMPORARY_DIRECTORY}/*/usr/bin/membudget")
    list(GET candidates 0 found)
    cmake_path(GET found PARENT_PATH found)
    cmake_path(GET found PARENT_PATH found)
    cmake_path(GET found PARENT_PATH appdir)
endif()
message(STATUS "CPack: bundling the AppDir in ${appdir}")
execute_process(
    COMMAND bash "${CPACK_MEMBUDGET_SOURCE_DIR}/packaging/bundle-appdir.sh" "${appdir}" "${CPACK_MEMBUDGET_QT_PLUGIN_DIR}"
    RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "packaging/bundle-appdir.sh failed (${rc})")
endif()
