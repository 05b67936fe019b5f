//! HTML writers: report.html and compare.html. Each is one self-contained
//! file: inline CSS, inline SVG charts, no scripts and no network access.

use std::io::{self, Write};

use super::compare::Comparison;
use super::compare_doc::compare_doc;
use super::doc::{Block, Doc};
use super::format::xml_escape;
use super::model::{BenchReport, ClassroomReport};
use super::run_docs::{bench_doc, classroom_doc};
use super::svg::Chart;

/// Writes report.html for a benchmark run.
pub fn write_bench(report: &BenchReport, out: &mut dyn Write) -> io::Result<()> {
    render(&bench_doc(report), out)
}

/// Writes report.html for a classroom run.
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

/// Writes compare.html.
pub fn write_comparison(comparison: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    render(&compare_doc(comparison), out)
}

const STYLE: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#222;margin:0;background:#fafafa}
main{max-width:1320px;margin:0 auto;padding:24px 32px;background:#fff}
h1{font-size:1.6em;margin:0 0 .4em}
h2{font-size:1.25em;margin:1.6em 0 .5em;border-bottom:1px solid #ddd;padding-bottom:.2em}
p{line-height:1.45;max-width:60em}
.scroll{overflow-x:auto}
table{border-collapse:collapse;font-size:.9em;margin:.5em 0}
th,td{border:1px solid #d4d4d4;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f0f3f6;font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tbody tr:nth-child(even){background:#f8f9fa}
td.pass{color:#006d4e;font-weight:700}
td.fail{color:#b33c00;font-weight:700}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(460px,1fr));gap:16px;margin:1em 0}
figure{margin:0;max-width:760px;border:1px solid #e3e3e3;background:#fff}
figure svg{display:block;width:100%;height:auto}
figure.wide{grid-column:1/-1;max-width:980px}
";

fn render(doc: &Doc, out: &mut dyn Write) -> io::Result<()> {
    let title = xml_escape(&doc.title);
    writeln!(out, "<!DOCTYPE html>")?;
    writeln!(out, "<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">")?;
    writeln!(
        out,
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    )?;
    writeln!(
        out,
        "<title>{title}</title>\n<style>\n{STYLE}</style>\n</head>"
    )?;
    writeln!(out, "<body>\n<main>\n<h1>{title}</h1>")?;
    render_blocks(&doc.blocks, out)?;
    writeln!(out, "</main>\n</body>\n</html>")
}

fn render_blocks(blocks: &[Block], out: &mut dyn Write) -> io::Result<()> {
    let mut in_charts = false;
    for block in blocks {
        let is_chart = matches!(block, Block::Chart(_));
        if is_chart && !in_charts {
            writeln!(out, "<div class=\"charts\">")?;
        } else if !is_chart && in_charts {
            writeln!(out, "</div>")?;
        }
        in_charts = is_chart;
        render_block(block, out)?;
    }
    if in_charts {
        writeln!(out, "</div>")?;
    }
    Ok(())
}

fn render_block(block: &Block, out: &mut dyn Write) -> io::Result<()> {
    match block {
        Block::Heading(level, text) => {
            let l = (*level).clamp(2, 6);
            writeln!(out, "<h{l}>{}</h{l}>", xml_escape(text))
        }
        Block::Paragraph(text) => writeln!(out, "<p>{}</p>", xml_escape(text)),
        Block::List(items) => {
            writeln!(out, "<ul>")?;
            for item in items {
                writeln!(out, "<li>{}</li>", xml_escape(item))?;
            }
            writeln!(out, "</ul>")
        }
        Block::Table {
            header,
            rows,
            numeric_from,
        } => {
            let class = |i: usize| {
                if i >= *numeric_from {
                    " class=\"num\""
                } else {
                    ""
                }
            };
            writeln!(out, "<div class=\"scroll\"><table>\n<thead><tr>")?;
            for (i, h) in header.iter().enumerate() {
                write!(out, "<th{}>{}</th>", class(i), xml_escape(h))?;
            }
            writeln!(out, "</tr></thead>\n<tbody>")?;
            for row in rows {
                write!(out, "<tr>")?;
                for (i, cell) in row.iter().enumerate() {
                    let class = match cell.as_str() {
                        "PASS" => " class=\"num pass\"",
                        "FAIL" => " class=\"num fail\"",
                        _ => class(i),
                    };
                    write!(out, "<td{class}>{}</td>", xml_escape(cell))?;
                }
                writeln!(out, "</tr>")?;
            }
            writeln!(out, "</tbody>\n</table></div>")
        }
        Block::Chart(chart) => {
            let wide = matches!(**chart, Chart::Timeline(_));
            writeln!(
                out,
                "{}",
                if wide {
                    "<figure class=\"wide\">"
                } else {
                    "<figure>"
                }
            )?;
            out.write_all(chart.render().as_bytes())?;
            writeln!(out, "</figure>")
        }
        Block::HtmlOnly(blocks) => render_blocks(blocks, out),
    }
}
