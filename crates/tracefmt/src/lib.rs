//! The native compressed trace format (.pmt), shared by the tracers and the reader
