//! Markdown writers: report.md and compare.md, ready to paste into release
//! notes. Charts are HTML-only; every figure is also in a table here.

use std::io::{self, Write};

use super::compare::Comparison;
use super::compare_doc::compare_doc;
use super::doc::{Block, Doc};
use super::format::md_escape;
use super::model::{BenchReport, ClassroomReport};
use super::run_docs::{bench_doc, classroom_doc};

/// Writes report.md for a benchmark run.
pub fn write_bench(report: &BenchReport, out: &mut dyn Write) -> io::Result<()> {
    render(&bench_doc(report), out)
}

/// Writes report.md for a classroom run.
pub fn write_classroom(report: &ClassroomReport, out: &mut dyn Write) -> io::Result<()> {
    render(&classroom_doc(report), out)
}

/// Writes the report of a host timeline alone.
pub fn write_timeline(
    report: &super::timeline::TimelineReport,
    out: &mut dyn Write,
) -> io::Result<()> {
    render(&super::timeline::timeline_doc(report), out)
}

/// Writes compare.md.
pub fn write_comparison(comparison: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    render(&compare_doc(comparison), out)
}

fn render(doc: &Doc, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "# {}", md_escape(&doc.title))?;
    for block in &doc.blocks {
        render_block(block, out)?;
    }
    Ok(())
}

fn render_block(block: &Block, out: &mut dyn Write) -> io::Result<()> {
    match block {
        Block::Heading(level, text) => {
            let hashes = "#".repeat(usize::from(*level).clamp(2, 6));
            writeln!(out, "\n{hashes} {}", md_escape(text))
        }
        Block::Paragraph(text) => writeln!(out, "\n{}", md_escape(text)),
        Block::List(items) => {
            writeln!(out)?;
            for item in items {
                writeln!(out, "- {}", md_escape(item))?;
            }
            Ok(())
        }
        Block::Table {
            header,
            rows,
            numeric_from,
        } => {
            writeln!(out)?;
            let cells: Vec<String> = header.iter().map(|h| md_escape(h)).collect();
            writeln!(out, "| {} |", cells.join(" | "))?;
            let align: Vec<&str> = (0..header.len())
                .map(|i| if i >= *numeric_from { "---:" } else { "---" })
                .collect();
            writeln!(out, "|{}|", align.join("|"))?;
            for row in rows {
                let cells: Vec<String> = row.iter().map(|c| md_escape(c)).collect();
                writeln!(out, "| {} |", cells.join(" | "))?;
            }
            Ok(())
        }
        Block::Chart(_) | Block::HtmlOnly(_) => Ok(()),
    }
}
