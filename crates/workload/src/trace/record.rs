//! Recording a program with valgrind lackey into a `.pmt` trace, and converting saved lackey
//! output.

use super::lackey::{self, LackeyStats};
use super::Error;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use tracefmt::{Header, Totals, Writer};

/// Converts a saved lackey text file into a trace.
pub fn convert_file(lackey_path: &Path, out_path: &Path, header: &Header) -> Result<(LackeyStats, Totals), Error> {
    let input = File::open(lackey_path).map_err(|e| Error::io(lackey_path, e))?;
    convert_stream(input, &lackey_path.display().to_string(), out_path, header)
}

/// Converts lackey text arriving on `input` (a file or a pipe) into a trace at `out_path`.
pub fn convert_stream<R: std::io::Read>(input: R, source: &str, out_path: &Path, header: &Header) -> Result<(LackeyStats, Totals), Error> {
    let out = File::create(out_path).map_err(|e| Error::io(out_path, e))?;
    let name = out_path.display().to_string();
    let fmt_err = |err| Error::Format { path: name.clone(), err };
    let mut writer = Writer::new(BufWriter::with_capacity(1 << 20, out), header).map_err(fmt_err)?;
    let stats = lackey::convert(input, source, |tid, rec| writer.push(tid, rec).map_err(fmt_err))?;
    let totals = writer.finish().map_err(fmt_err)?;
    Ok((stats, totals))
}
