# The Debian packages: `cpack -G DEB` in a build directory (scripts/package.sh
# makes a Release one) writes wsrelay_VERSION-REVISION_ARCH.deb with
#   - everything `cmake --install` installs, under /usr, but the simulator,
#   - the component `system` (cmake/Install.cmake): /etc/wsrelay/wsrelay.yaml
#     as a conffile, the systemd units in /lib/systemd/system, and Debian's
#     changelog and copyright,
#   - the maintainer scripts of packaging/debian/ (the user wsrelay, the
#     modes of /etc/wsrelay, /var/lib/wsrelay),
#   - Depends computed from the binaries' shared libraries by dpkg-shlibdeps,
#     binaries stripped.
# and, in a build with the simulator, wsrelay-sim_VERSION-REVISION_ARCH.deb
# with /usr/bin/wsrelay-sim (the component sim, cmake/Install.cmake) alone,
# so that only it depends on libmicrohttpd.
# The front finds wsrelay-net relative to itself (src/front.c), so a package
# made from a build configured for another prefix still works.

set(WSRELAY_DEB_REVISION 1 CACHE STRING "The Debian revision of the package")
set(WSRELAY_MAINTAINER "wsrelay maintainers <wsrelay@example.org>"
    CACHE STRING "The package's Maintainer (name <address>)")
set(WSRELAY_DEB_VERSION ${PROJECT_VERSION}-${WSRELAY_DEB_REVISION})

# Debian's changelog, versioned as the project, gzipped without a time stamp.
configure_file(${PROJECT_SOURCE_DIR}/packaging/debian/changelog.in
               ${CMAKE_BINARY_DIR}/debian/changelog @ONLY)
execute_process(COMMAND gzip -9n INPUT_FILE ${CMAKE_BINARY_DIR}/debian/changelog
                OUTPUT_FILE ${CMAKE_BINARY_DIR}/debian/changelog.Debian.gz
                COMMAND_ERROR_IS_FATAL ANY)
install(FILES ${CMAKE_BINARY_DIR}/debian/changelog.Debian.gz
              ${PROJECT_SOURCE_DIR}/packaging/debian/copyright
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/wsrelay
        COMPONENT system EXCLUDE_FROM_ALL)
if(TARGET wsrelay-sim)
  install(FILES ${CMAKE_BINARY_DIR}/debian/changelog.Debian.gz
                ${PROJECT_SOURCE_DIR}/packaging/debian/copyright
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/wsrelay-sim
          COMPONENT sim EXCLUDE_FROM_ALL)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME wsrelay)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT ${WSRELAY_MAINTAINER})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "relay T&D WebStorage data-logger alerts to the people on call")
set(CPACK_PACKAGE_DESCRIPTION
    "wsrelay polls the alert logs of T&D data loggers on the T&D WebStorage
platform, within its budget of API calls, and sends each new alert exactly
once to email, Slack, Microsoft Teams, a webhook or a file, each message
rendered from a template. It runs every minute from a systemd timer (or
cron) as the unprivileged user wsrelay, with its state in /var/lib/wsrelay
and its configuration in /etc/wsrelay/wsrelay.yaml.")
# One package per group: the relay's install and the system component
# (absolute paths, staged under the package's root thanks to DESTDIR) make
# wsrelay; the simulator makes wsrelay-sim.
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL relay system)
set(CPACK_COMPONENT_RELAY_GROUP wsrelay)
set(CPACK_COMPONENT_SYSTEM_GROUP wsrelay)
set(CPACK_DEBIAN_WSRELAY_PACKAGE_NAME wsrelay)
set(CPACK_DEBIAN_WSRELAY_DESCRIPTION "${CPACK_PACKAGE_DESCRIPTION}")
if(TARGET wsrelay-sim)
  list(APPEND CPACK_COMPONENTS_ALL sim)
  set(CPACK_DEBIAN_SIM_PACKAGE_NAME wsrelay-sim)
  set(CPACK_DEBIAN_SIM_PACKAGE_SECTION devel)
  set(CPACK_DEBIAN_SIM_DESCRIPTION
      "simulator of the T&D WebStorage API, for testing wsrelay
wsrelay-sim serves the T&D WebStorage API on 127.0.0.1 from a scenario
file, with a virtual clock and the platform's limits, so that wsrelay and
its configuration can be tried without a platform account. wsrelay's
demo and tests use it; a server running wsrelay does not need it.")
endif()
set(CPACK_SET_DESTDIR ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${WSRELAY_DEB_REVISION})
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The maintainer scripts' own needs; dpkg-shlibdeps adds the libraries.
# (Set for the group wsrelay alone: a package-wide value would be
# wsrelay-sim's too.)
set(CPACK_DEBIAN_WSRELAY_PACKAGE_DEPENDS "adduser, ca-certificates")
# The fonts of the alarm mails' charts (Latin and Japanese text).
set(CPACK_DEBIAN_WSRELAY_PACKAGE_RECOMMENDS "fonts-dejavu-core, fonts-ipaexfont-gothic")
set(CPACK_DEBIAN_WSRELAY_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/debian/conffiles
    ${PROJECT_SOURCE_DIR}/packaging/debian/postinst
    ${PROJECT_SOURCE_DIR}/packaging/debian/prerm
    ${PROJECT_SOURCE_DIR}/packaging/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

include(CPack)
