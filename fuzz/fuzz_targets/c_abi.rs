//! The C ABI's `extern "C"` functions with arbitrary counts, spans, addresses, NaN and
//! infinite values, null and misaligned pointers (nbody_c::fuzz): no panic, no abort, a
//! status for every refusal, finite outputs on success. The committed corpus
//! (fuzz/corpus/c_abi) is replayed by capi/tests/fuzz_corpus.rs on stable.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| nbody_c::fuzz::c_abi(data));
