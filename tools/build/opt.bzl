"""opt_binary: an executable target built with -c opt, whatever the build's
compilation mode, for tests whose run time is the policies' (the vectors and
figures are the same at every optimisation level: tools/determinism.sh).

    load("//tools/build:opt.bzl", "opt_binary")
    opt_binary(name = "bench_opt", binary = ":bench")

A test then runs `tools/bench/bench_opt` from its runfiles.
"""

def _opt_transition_impl(settings, attr):
    return {"//command_line_option:compilation_mode": "opt"}

_opt_transition = transition(
    implementation = _opt_transition_impl,
    inputs = [],
    outputs = ["//command_line_option:compilation_mode"],
)

def _opt_binary_impl(ctx):
    binary = ctx.attr.binary[0]
    executable = binary[DefaultInfo].files_to_run.executable
    out = ctx.actions.declare_file(ctx.label.name)
    ctx.actions.symlink(output = out, target_file = executable, is_executable = True)
    runfiles = ctx.runfiles(files = [out, executable]).merge(binary[DefaultInfo].default_runfiles)
    return [DefaultInfo(executable = out, files = depset([out]), runfiles = runfiles)]

opt_binary = rule(
    implementation = _opt_binary_impl,
    attrs = {
        "binary": attr.label(cfg = _opt_transition, executable = True, mandatory = True),
        "_allowlist_function_transition": attr.label(
            default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
        ),
    },
    executable = True,
)
