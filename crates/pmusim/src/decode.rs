//! `pmusim decode`: a NUMAchine monitor register value in words, field by field (seed 000,
//! Table 4.4), or a monitor configuration file compiled to its register values.

use crate::Failure;
use clap::Args;
use monitor::numachine::config;
use monitor::numachine::regs::{describe, parse_u64, Reg};

#[derive(Args)]
pub struct DecodeArgs {
    /// Register: acronym (PR, PW, CW, CF, AWhi, AWlo, AFhi, AFlo, GPCM0-3, SCM, GPCE, SRAMCE) or
    /// word address 0-F.
    pub register: Option<String>,
    /// Value (decimal, 0x hex or 0b binary).
    pub value: Option<String>,
    /// Compile a monitor configuration (a TOML file, or `numachine` for the built-in default)
    /// and print every register it sets.
    #[arg(long)]
    pub config: Option<String>,
}

fn print_fields(reg: Reg, v: u64) -> Result<(), Failure> {
    let fields = describe(reg, v).map_err(|e| Failure::input(e.to_string()))?;
    println!("{} ({}) = {v:#010x}", reg.acronym(), reg.title());
    for (name, x, words) in fields {
        let f = reg.fields().iter().find(|f| f.name == name).unwrap();
        println!("  {:>6}  {:<16} {:>#10x}  {}", f.bits(), name, x, words);
    }
    Ok(())
}

pub fn run(a: DecodeArgs) -> Result<u8, Failure> {
    if let Some(file) = &a.config {
        let setup = if file == "numachine" || file == "default" {
            config::default_setup()
        } else {
            let text = std::fs::read_to_string(file)
                .map_err(|e| Failure::input(format!("cannot read `{file}`: {e}")))?;
            config::compile(&text, file, None).map_err(Failure::input)?
        };
        println!("configuration `{}`", setup.name);
        for (i, l) in setup.labels.iter().enumerate() {
            if !l.is_empty() {
                println!("  counter {i}: {l}");
            }
        }
        if let Some(t) = setup.sram_threshold {
            println!("  SRAM words preloaded with -{t}");
        }
        println!();
        for (reg, v) in setup.regs.list() {
            print_fields(reg, v as u64)?;
        }
        return Ok(0);
    }
    let (Some(r), Some(v)) = (&a.register, &a.value) else {
        return Err(Failure::input(
            "usage: pmusim decode <register> <value>, or pmusim decode --config FILE.toml",
        ));
    };
    let reg = Reg::parse(r).map_err(|e| Failure::input(e.to_string()))?;
    let v = parse_u64(v).map_err(Failure::input)?;
    print_fields(reg, v)?;
    Ok(0)
}
