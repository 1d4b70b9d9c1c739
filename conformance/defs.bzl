"""conformance_test: a Bazel test target that runs kvspec's vectors against a port.

    load("//conformance:defs.bzl", "conformance_test")
    conformance_test(
        name = "my_port_conformance_test",
        port = ":my_port",                  # an executable target: the testee
        expectations = "my_port.expectations",
        shard_count = 4,                    # optional; the runner honours sharding
    )

The test runs //conformance:runner with --port set to the port's executable
and --expectations to the file, writes JUnit XML where Bazel asks for it, and
passes when the run has no unexpected outcome.
"""

def conformance_test(name, port, expectations, shard_count = 1, size = "medium", **kwargs):
    native.sh_test(
        name = name,
        srcs = ["//conformance:run_conformance.sh"],
        args = [
            "$(rootpath %s)" % port,
            "$(rootpath %s)" % expectations,
        ],
        data = [
            port,
            expectations,
            "//conformance:runner",
            "//:vectors",
        ],
        shard_count = shard_count,
        size = size,
        **kwargs
    )
