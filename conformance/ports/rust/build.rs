//! Compiles spec/kvspec.proto and spec/conformance.proto with prost-build.
//! The proto path is the repository root, because conformance.proto imports
//! "spec/kvspec.proto". `KVSPEC_ROOT`, if set, names another root holding
//! spec/*.proto (cargo-mutants builds a copy of this crate outside the
//! repository; mutation/run.sh points it at a snapshot).
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=KVSPEC_ROOT");
    let root = match std::env::var_os("KVSPEC_ROOT") {
        Some(r) => PathBuf::from(r),
        None => PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../.."),
    };
    let kvspec = root.join("spec/kvspec.proto");
    let conformance = root.join("spec/conformance.proto");
    if std::env::var_os("PROTOC").is_none() && std::path::Path::new("/usr/bin/protoc").exists() {
        // prost-build reads PROTOC; Debian's protoc lives here.
        std::env::set_var("PROTOC", "/usr/bin/protoc");
    }
    println!("cargo:rerun-if-changed={}", kvspec.display());
    println!("cargo:rerun-if-changed={}", conformance.display());
    println!("cargo:rerun-if-env-changed=PROTOC");
    prost_build::Config::new()
        .compile_protos(&[&kvspec, &conformance], &[&root])
        .expect("compiling the kvspec protos");
}
