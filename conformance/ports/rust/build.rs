//! Compiles spec/kvspec.proto and spec/conformance.proto with prost-build.
//! The proto path is the repository root, because conformance.proto imports
//! "spec/kvspec.proto".
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.join("../../..");
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
