//! ELF symbols
