//! `sweep collect --format parquet -o FILE` (cargo feature `parquet`): the runs' table as one
//! Parquet file, for pandas (`pd.read_parquet`) and polars users.
//!
//! Each column gets one physical type from its cells: INT64 when every value is an integer,
//! DOUBLE when the values are numbers (an estimate's monitored value), else a UTF-8 string;
//! an empty cell (a missing or failed run's metric) is a null. Column names are the table's
//! (the plan's axes and metric names). Uncompressed, one row group: a sweep's table is small.

use report::model::{Cell, Num, Table};
use std::sync::Arc;

use parquet::basic::{LogicalType, Repetition, Type as Physical};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

/// What one column holds.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Holds {
    Int,
    Float,
    Text,
}

fn number(c: &Cell) -> Option<Num> {
    match c {
        Cell::Int(v) => Some(Num::Int(*v)),
        Cell::Float(v) => Some(Num::Float(*v)),
        Cell::Estimate { monitored, .. } => Some(*monitored),
        _ => None,
    }
}

fn holds(t: &Table, col: usize) -> Holds {
    let mut h = Holds::Int;
    for r in &t.rows {
        match (&r[col], number(&r[col])) {
            (Cell::Empty, _) => {}
            (_, Some(Num::Int(_))) => {}
            (_, Some(Num::Float(_))) => h = Holds::Float,
            (_, None) => return Holds::Text,
        }
    }
    h
}

fn text(c: &Cell) -> Option<String> {
    match c {
        Cell::Empty => None,
        Cell::Text(s) => Some(s.clone()),
        Cell::Int(v) => Some(v.to_string()),
        Cell::Float(v) => Some(v.to_string()),
        Cell::Estimate { monitored, .. } => Some(match monitored {
            Num::Int(v) => v.to_string(),
            Num::Float(v) => v.to_string(),
        }),
    }
}

/// The Parquet bytes of `t`.
pub fn table(t: &Table) -> Result<Vec<u8>, String> {
    let kinds: Vec<Holds> = (0..t.columns.len()).map(|c| holds(t, c)).collect();
    let fields = t
        .columns
        .iter()
        .zip(&kinds)
        .map(|(c, k)| {
            let b = match k {
                Holds::Int => Type::primitive_type_builder(&c.name, Physical::INT64),
                Holds::Float => Type::primitive_type_builder(&c.name, Physical::DOUBLE),
                Holds::Text => Type::primitive_type_builder(&c.name, Physical::BYTE_ARRAY)
                    .with_logical_type(Some(LogicalType::String)),
            };
            b.with_repetition(Repetition::OPTIONAL)
                .build()
                .map(Arc::new)
                .map_err(|e| format!("column `{}`: {e}", c.name))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let schema = Type::group_type_builder("sweep")
        .with_fields(fields)
        .build()
        .map_err(|e| e.to_string())?;
    let props = Arc::new(WriterProperties::builder().build());
    let mut out = Vec::new();
    let mut w =
        SerializedFileWriter::new(&mut out, Arc::new(schema), props).map_err(|e| e.to_string())?;
    let mut rg = w.next_row_group().map_err(|e| e.to_string())?;
    let mut col = 0;
    while let Some(mut cw) = rg.next_column().map_err(|e| e.to_string())? {
        let cells = t.rows.iter().map(|r| &r[col]);
        let def: Vec<i16> = cells
            .clone()
            .map(|c| i16::from(c != &Cell::Empty))
            .collect();
        let r = match kinds[col] {
            Holds::Int => {
                let v: Vec<i64> = cells
                    .filter_map(|c| match number(c) {
                        Some(Num::Int(v)) => Some(v as i64),
                        _ => None,
                    })
                    .collect();
                cw.typed::<Int64Type>().write_batch(&v, Some(&def), None)
            }
            Holds::Float => {
                let v: Vec<f64> = cells
                    .filter_map(|c| match number(c) {
                        Some(Num::Int(v)) => Some(v as f64),
                        Some(Num::Float(v)) => Some(v),
                        None => None,
                    })
                    .collect();
                cw.typed::<DoubleType>().write_batch(&v, Some(&def), None)
            }
            Holds::Text => {
                let v: Vec<ByteArray> = cells
                    .filter_map(text)
                    .map(|s| ByteArray::from(s.into_bytes()))
                    .collect();
                cw.typed::<ByteArrayType>()
                    .write_batch(&v, Some(&def), None)
            }
        };
        r.map_err(|e| e.to_string())?;
        cw.close().map_err(|e| e.to_string())?;
        col += 1;
    }
    rg.close().map_err(|e| e.to_string())?;
    w.close().map_err(|e| e.to_string())?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    use report::model::Column;

    /// Written and read back: every cell's value and type, nulls for empty cells.
    #[test]
    fn a_table_round_trips_with_types_and_nulls() {
        let mut t = Table::new(
            "sweep",
            "t",
            vec![
                Column::label("index"),
                Column::label("caches.l2.size_bytes"),
                Column::label("status"),
                Column::label("cycles"),
                Column::label("miss ratio"),
            ],
        );
        t.row(vec![
            Cell::Int(0),
            Cell::Int(262144),
            "ok".into(),
            Cell::Int(9_905_931),
            Cell::Float(0.25),
        ]);
        t.row(vec![
            Cell::Int(1),
            Cell::Int(1048576),
            "failed".into(),
            Cell::Empty,
            Cell::Empty,
        ]);
        let path =
            std::env::temp_dir().join(format!("pmusim-parquet-{}.parquet", std::process::id()));
        std::fs::write(&path, table(&t).unwrap()).unwrap();
        let r = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
        assert_eq!(r.metadata().file_metadata().num_rows(), 2);
        let rows: Vec<Vec<(String, Field)>> = r
            .get_row_iter(None)
            .unwrap()
            .map(|row| {
                row.unwrap()
                    .get_column_iter()
                    .map(|(n, f)| (n.clone(), f.clone()))
                    .collect()
            })
            .collect();
        assert_eq!(
            rows[0],
            vec![
                ("index".to_string(), Field::Long(0)),
                ("caches.l2.size_bytes".to_string(), Field::Long(262144)),
                ("status".to_string(), Field::Str("ok".into())),
                ("cycles".to_string(), Field::Long(9_905_931)),
                ("miss ratio".to_string(), Field::Double(0.25)),
            ]
        );
        assert_eq!(rows[1][2].1, Field::Str("failed".into()));
        assert_eq!(rows[1][3].1, Field::Null);
        assert_eq!(rows[1][4].1, Field::Null);
        let _ = std::fs::remove_file(&path);
    }
}
