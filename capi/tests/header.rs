//! The committed header is what cbindgen makes of the crate now: a test fails when it
//! is stale (`NBODY_BLESS=1 cargo test -p nbody-capi --test header` rewrites it).

#[test]
fn header_is_current() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let config = cbindgen::Config::from_file(format!("{dir}/cbindgen.toml")).expect("cbindgen.toml parses");
    let bindings =
        cbindgen::Builder::new().with_crate(dir).with_config(config).generate().expect("cbindgen reads the crate");
    let mut fresh = Vec::new();
    bindings.write(&mut fresh);
    let fresh = String::from_utf8(fresh).expect("UTF-8 header");
    let path = format!("{dir}/include/nbody.h");
    if std::env::var_os("NBODY_BLESS").is_some() {
        std::fs::write(&path, &fresh).expect("writing the header");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "include/nbody.h is stale: run NBODY_BLESS=1 cargo test -p nbody-capi --test header and commit it"
    );
}
