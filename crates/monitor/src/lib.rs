//! Monitor primitives and the seed monitors (NUMAchine, FlashPoint, ...)
pub mod flashpoint;
