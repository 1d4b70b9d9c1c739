"""Offline stand-in for @rules_cc: re-exports Bazel 4.2.3's native C++ rules.

Bazel's built-in WORKSPACE suffix would download rules_cc; the project's
WORKSPACE points it here instead (see ../../../WORKSPACE).
"""

cc_library = native.cc_library
cc_binary = native.cc_binary
cc_test = native.cc_test
cc_toolchain = native.cc_toolchain
cc_toolchain_suite = native.cc_toolchain_suite
cc_proto_library = native.cc_proto_library
cc_import = native.cc_import
objc_library = native.objc_library
