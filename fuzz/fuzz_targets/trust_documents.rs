//! `image_reflector::fuzzing::trust_documents`: what it feeds and asserts is documented there.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| image_reflector::fuzzing::trust_documents(data));
