# SPDX-License-Identifier: GPL-3.0-or-later
# membudget_install_gzipped(FILE DESTINATION NAME): installs FILE as DESTINATION/NAME.gz, compressed
# at build time as Debian keeps man pages and changelogs (plain NAME when there is no gzip).
# membudget_install_man_page(PAGE): a roff page (docs/*.1) into MANDIR/man1.
find_program(MEMBUDGET_GZIP gzip)
function(membudget_install_gzipped file destination name)
    if(MEMBUDGET_GZIP)
        set(gz ${CMAKE_CURRENT_BINARY_DIR}/${name}.gz)
        add_custom_command(OUTPUT ${gz}
            COMMAND ${MEMBUDGET_GZIP} -9 -n -c ${file} > ${gz}
            DEPENDS ${file}
            COMMENT "Compressing ${name}")
        add_custom_target(gzip_${name} ALL DEPENDS ${gz})
        install(FILES ${gz} DESTINATION ${destination})
    else()
        install(FILES ${file} DESTINATION ${destination} RENAME ${name})
    endif()
endfunction()

function(membudget_install_man_page page)
    get_filename_component(name ${page} NAME)
    membudget_install_gzipped(${page} ${CMAKE_INSTALL_MANDIR}/man1 ${name})
endfunction()
