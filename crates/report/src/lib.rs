//! Reports: tables, JSON/CSV, plots
