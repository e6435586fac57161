//! Monitor primitives and the seed monitors (NUMAchine, FlashPoint, ...)
