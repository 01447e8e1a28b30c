//! `image_reflector::fuzzing::notation_envelope`: what it feeds and asserts is documented there.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| image_reflector::fuzzing::notation_envelope(data));
