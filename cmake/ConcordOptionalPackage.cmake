# concord_optional_package(WHAT OPTION MODULE PREFIX DEBIAN RESULT): resolves an AUTO|ON|OFF
# cache option (CONCORD_WITH_UCX, CONCORD_WITH_PMIX) into RESULT (ON/OFF, in the caller's
# scope): AUTO turns it on when pkg-config finds MODULE (imported target PkgConfig::PREFIX),
# ON requires it (a fatal error naming the Debian package DEBIAN otherwise), OFF leaves it out.
# WHAT names the feature in the status line.
function(concord_optional_package what option module prefix debian result)
  string(TOUPPER "${${option}}" mode)
  set(enabled OFF)
  if(NOT mode MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "${option} must be AUTO, ON or OFF (got '${${option}}')")
  endif()
  if(NOT mode STREQUAL "OFF")
    pkg_check_modules(${prefix} QUIET IMPORTED_TARGET GLOBAL ${module})
    if(${prefix}_FOUND)
      set(enabled ON)
      message(STATUS "Concord: ${what} ON (${module} ${${prefix}_VERSION})")
    elseif(mode STREQUAL "ON")
      message(FATAL_ERROR "${option}=ON but pkg-config finds no `${module}` (install ${debian})")
    endif()
  endif()
  if(NOT enabled)
    message(STATUS "Concord: ${what} OFF (${option}=${${option}})")
  endif()
  set(${result} ${enabled} PARENT_SCOPE)
endfunction()
