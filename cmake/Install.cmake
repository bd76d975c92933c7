# What `cmake --install` puts where (GNUInstallDirs, relative to the
# prefix):
#   bin/                         wsrelay, and wsrelay-sim (component sim)
#   libexec/wsrelay/             wsrelay-net, which the front execs, and
#                                wsrelay-chart, which wsrelay-net runs to draw a chart
#   share/wsrelay/templates/     the built-in templates, to copy and adapt
#   share/doc/wsrelay/           README.md, docs/
#   share/doc/wsrelay/examples/  the example config, rules, systemd units, cron file
#   share/man/man1, man5         the man pages, when man/ has them
#
# The files only a system package places outside the prefix (the config as
# /etc/wsrelay/wsrelay.yaml, the units in /lib/systemd/system, Debian's
# changelog and copyright) are the component `system`, which a plain
# install leaves out (`cmake --install build --component system` adds them)
# and the Debian package includes (cmake/DebianPackage.cmake).

# Everything without a component of its own is the relay's (the Debian
# package wsrelay); the simulator is the component `sim`, its own package
# wsrelay-sim, so that the relay's package does not need libmicrohttpd.
set(CMAKE_INSTALL_DEFAULT_COMPONENT_NAME relay)
install(TARGETS wsrelay RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS wsrelay-net wsrelay-chart RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/wsrelay)
if(TARGET wsrelay-sim)
  install(TARGETS wsrelay-sim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT sim)
endif()

set(WSRELAY_DATADIR ${CMAKE_INSTALL_DATADIR}/wsrelay)
set(WSRELAY_DOCDIR ${CMAKE_INSTALL_DATAROOTDIR}/doc/wsrelay)
set(WSRELAY_EXAMPLES ${WSRELAY_DOCDIR}/examples)
set(WSRELAY_UNITS
    ${PROJECT_SOURCE_DIR}/packaging/systemd/wsrelay.service
    ${PROJECT_SOURCE_DIR}/packaging/systemd/wsrelay.timer
    ${PROJECT_SOURCE_DIR}/packaging/systemd/wsrelay-loop.service)

# The templates built into the binary, with their README.
file(GLOB WSRELAY_TEMPLATES_ALL CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/templates/*)
install(FILES ${WSRELAY_TEMPLATES_ALL} DESTINATION ${WSRELAY_DATADIR}/templates)

# The documentation, laid out as in the source so that README's links work.
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${WSRELAY_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${WSRELAY_DOCDIR}/docs)

# The examples: the commented config, the rules, the units and the cron file.
install(FILES ${PROJECT_SOURCE_DIR}/packaging/wsrelay.yaml DESTINATION ${WSRELAY_EXAMPLES})
file(GLOB WSRELAY_RULE_EXAMPLES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/rules/*)
install(FILES ${WSRELAY_RULE_EXAMPLES} DESTINATION ${WSRELAY_EXAMPLES}/rules.d)
install(FILES ${WSRELAY_UNITS} DESTINATION ${WSRELAY_EXAMPLES}/systemd)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/cron/wsrelay DESTINATION ${WSRELAY_EXAMPLES}/cron)

# The man pages, compressed as Debian wants them, once man/ has them.
foreach(page wsrelay.1 wsrelay.yaml.5)
  if(EXISTS ${PROJECT_SOURCE_DIR}/man/${page})
    string(REGEX REPLACE ".*\\.([0-9])$" "\\1" section ${page})
    set(gz ${CMAKE_BINARY_DIR}/man/${page}.gz)
    add_custom_command(
      OUTPUT ${gz}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
      COMMAND sh -c "gzip -9n < \"$0\" > \"$1\"" ${PROJECT_SOURCE_DIR}/man/${page} ${gz}
      DEPENDS ${PROJECT_SOURCE_DIR}/man/${page}
      VERBATIM)
    list(APPEND WSRELAY_MAN_GZ ${gz})
    install(FILES ${gz} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
  endif()
endforeach()
if(WSRELAY_MAN_GZ)
  add_custom_target(wsrelay-man ALL DEPENDS ${WSRELAY_MAN_GZ})
endif()

# The system component: absolute paths, for a package or an image.
# The config is installed 0644 as Debian wants a conffile shipped; the
# package's postinst makes it root:wsrelay 0640 (dpkg-statoverride) before
# anyone can put a secret in it.
install(FILES ${PROJECT_SOURCE_DIR}/packaging/wsrelay.yaml
        DESTINATION /etc/wsrelay
        COMPONENT system EXCLUDE_FROM_ALL)
install(FILES ${WSRELAY_UNITS} DESTINATION /lib/systemd/system
        COMPONENT system EXCLUDE_FROM_ALL)
