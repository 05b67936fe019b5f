//! Snapshots of each chart kind from fixed values, and the edge cases
//! (empty, one point, non-finite values) that must still give valid SVG.

use crate::report_support;

use codendum_report::model::TimelinePoint;
use codendum_report::svg::{
    AxisTitle, CdfChart, CdfCurve, Chart, HistogramChart, LineChart, Series, TimelineChart,
    TimelineMarker,
};
use report_support::{assert_no_nan, check_markup, settings};

fn line_chart() -> LineChart {
    LineChart::new(
        "Output tokens per second against concurrency",
        AxisTitle::new("Concurrency", "requests in flight"),
        AxisTitle::new("Output", "tok/s"),
        vec![
            Series::new(
                "short",
                vec![
                    (1.0, 31.0),
                    (8.0, 155.5),
                    (16.0, 218.0),
                    (24.0, 218.0),
                    (40.0, 218.0),
                ],
            ),
            Series::new(
                "long",
                vec![
                    (1.0, 27.9),
                    (8.0, 139.9),
                    (16.0, 196.2),
                    (24.0, 196.2),
                    (40.0, 196.2),
                ],
            ),
        ],
    )
}

fn timeline_chart() -> TimelineChart {
    let samples = (0..=40)
        .map(|i| {
            let t = f64::from(i) * 3.0;
            let failed = i == 20;
            let running = f64::from(i.min(16));
            TimelinePoint {
                t_s: t,
                running: (!failed).then_some(running),
                waiting: (!failed).then_some(f64::from((i - 16).max(0))),
                kv_usage: (!failed).then_some(running * 0.006),
            }
        })
        .collect();
    TimelineChart {
        title: "Server timeline".to_string(),
        samples,
        shaded: vec![(50.0, Some(70.0))],
        markers: vec![
            TimelineMarker {
                t_s: 0.0,
                label: "short ×1".to_string(),
            },
            TimelineMarker {
                t_s: 45.0,
                label: "short ×16".to_string(),
            },
            TimelineMarker {
                t_s: 90.0,
                label: "short <40> & more".to_string(),
            },
        ],
    }
}

fn cdf_chart() -> CdfChart {
    CdfChart {
        title: "Time to complete a coding request".to_string(),
        x: AxisTitle::new("Coding-request time", "min"),
        counted: "coding requests".to_string(),
        curves: vec![
            CdfCurve {
                name: "classroom-64k".to_string(),
                values: vec![4.5, 6.0, 8.0, 11.0, 11.5, 14.0, 22.0, f64::NAN],
            },
            CdfCurve {
                name: "high concurrency".to_string(),
                values: vec![3.9, 5.0, 7.1, 8.3, 9.0, 12.5, 18.0],
            },
        ],
    }
}

fn histogram_chart() -> HistogramChart {
    HistogramChart {
        title: "Time to first token".to_string(),
        x: AxisTitle::new("TTFT", "s"),
        counted: "Requests".to_string(),
        values: vec![
            0.4, 0.5, 0.5, 1.2, 2.8, 3.1, 3.3, 4.9, 7.5, 12.0, 17.5, 18.0, 25.0, 60.0,
        ],
    }
}

fn check(svg: &str) {
    check_markup(svg).unwrap_or_else(|e| panic!("{e}\n{svg}"));
    assert_no_nan(svg);
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(svg.contains("viewBox=\"0 0 640.0 360.0\""));
}

#[test]
fn chart_snapshots() {
    let charts = [
        ("chart_line", Chart::Line(line_chart())),
        ("chart_timeline", Chart::Timeline(timeline_chart())),
        ("chart_cdf", Chart::Cdf(cdf_chart())),
        ("chart_histogram", Chart::Histogram(histogram_chart())),
    ];
    for (name, chart) in charts {
        let svg = chart.render();
        check(&svg);
        assert_eq!(svg, chart.render(), "{name} renders deterministically");
        settings().bind(|| insta::assert_snapshot!(name, svg));
    }
}

#[test]
fn charts_show_what_they_are_given() {
    let line = line_chart().render();
    for text in [
        "Output (tok/s)",
        "Concurrency (requests in flight)",
        ">short<",
        ">long<",
        ">200<",
    ] {
        assert!(line.contains(text), "line chart lacks {text}");
    }
    // Five circle markers on the first series plus one in the legend.
    assert_eq!(line.matches("<circle").count(), 6);
    let timeline = timeline_chart().render();
    assert!(
        timeline.contains("short &lt;40&gt; &amp; more"),
        "labels are escaped"
    );
    assert!(timeline.contains("KV cache usage (%)"));
    assert_eq!(
        timeline.matches("stroke-dasharray=\"3 3\"").count(),
        3,
        "one line per marker"
    );
    // The failed sample at index 20 splits each gauge's path into two.
    let running_path = timeline
        .lines()
        .find(|l| l.starts_with("<path") && l.contains("#0072B2"))
        .unwrap_or_default();
    assert_eq!(running_path.matches('M').count(), 2);
    let hist = histogram_chart().render();
    assert!(hist.contains(">Requests<"));
    assert!(hist.matches("<rect").count() >= 5);
}

#[test]
fn degenerate_data_does_not_break_charts() {
    let nan = f64::NAN;
    let cases = vec![
        Chart::Line(LineChart::new(
            "Empty",
            AxisTitle::new("x", ""),
            AxisTitle::new("y", "s"),
            vec![],
        )),
        Chart::Line(LineChart::new(
            "One point",
            AxisTitle::new("x", ""),
            AxisTitle::new("y", "s"),
            vec![Series::new("a", vec![(8.0, 2.5)])],
        )),
        Chart::Line(LineChart::new(
            "Only non-finite",
            AxisTitle::new("x", ""),
            AxisTitle::new("y", "s"),
            vec![Series::new(
                "a",
                vec![(nan, 1.0), (2.0, nan), (f64::INFINITY, 3.0)],
            )],
        )),
        Chart::Line(LineChart::new(
            "Flat zero",
            AxisTitle::new("x", ""),
            AxisTitle::new("y", ""),
            vec![Series::new("a", vec![(1.0, 0.0), (1.0, 0.0)])],
        )),
        Chart::Timeline(TimelineChart {
            title: "No samples".into(),
            samples: vec![],
            markers: vec![],
            shaded: vec![(1.0, None)],
        }),
        Chart::Timeline(TimelineChart {
            title: "One failed sample".into(),
            shaded: vec![],
            samples: vec![TimelinePoint {
                t_s: 0.0,
                running: None,
                waiting: None,
                kv_usage: None,
            }],
            markers: vec![TimelineMarker {
                t_s: nan,
                label: "lost".into(),
            }],
        }),
        Chart::Cdf(CdfChart {
            title: "Empty".into(),
            x: AxisTitle::new("t", "s"),
            counted: "x".into(),
            curves: vec![],
        }),
        Chart::Cdf(CdfChart {
            title: "One value".into(),
            x: AxisTitle::new("t", "s"),
            counted: "x".into(),
            curves: vec![CdfCurve {
                name: "a".into(),
                values: vec![3.0],
            }],
        }),
        Chart::Histogram(HistogramChart {
            title: "Empty".into(),
            x: AxisTitle::new("t", "s"),
            counted: "n".into(),
            values: vec![],
        }),
        Chart::Histogram(HistogramChart {
            title: "Same value".into(),
            x: AxisTitle::new("t", "s"),
            counted: "n".into(),
            values: vec![2.0, 2.0, 2.0, nan],
        }),
        Chart::Histogram(HistogramChart {
            title: "Huge spread".into(),
            x: AxisTitle::new("t", "s"),
            counted: "n".into(),
            values: vec![-1e12, 0.0, 1e12],
        }),
    ];
    for chart in cases {
        let svg = chart.render();
        check(&svg);
        if chart.title() == "Empty" || chart.title() == "Only non-finite" {
            assert!(svg.contains("No data"), "{}", chart.title());
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]

    /// Any numbers at all, NaN and infinities included, give valid SVG
    /// without non-finite text.
    #[test]
    fn any_numbers_give_valid_svg(
        points in proptest::collection::vec((proptest::num::f64::ANY, proptest::num::f64::ANY), 0..12),
        values in proptest::collection::vec(proptest::num::f64::ANY, 0..24),
    ) {
        let series = vec![Series::new("a", points.clone()), Series::new("b", points.iter().map(|p| (p.1, p.0)).collect())];
        let samples = points
            .iter()
            .map(|&(t, v)| TimelinePoint { t_s: t, running: Some(v), waiting: Some(-v), kv_usage: Some(v / 100.0) })
            .collect();
        let charts = [
            Chart::Line(LineChart::new("p", AxisTitle::new("x", ""), AxisTitle::new("y", ""), series)),
            Chart::Timeline(TimelineChart {
                title: "t".into(),
                samples,
                markers: values.iter().map(|&t| TimelineMarker { t_s: t, label: "m".into() }).collect(),
                shaded: values.iter().map(|&t| (t, values.first().copied())).collect(),
            }),
            Chart::Cdf(CdfChart {
                title: "c".into(),
                x: AxisTitle::new("x", "s"),
                counted: "n".into(),
                curves: vec![CdfCurve { name: "a".into(), values: values.clone() }],
            }),
            Chart::Histogram(HistogramChart { title: "h".into(), x: AxisTitle::new("x", "s"), counted: "n".into(), values: values.clone() }),
        ];
        for chart in charts {
            let svg = chart.render();
            proptest::prop_assert!(check_markup(&svg).is_ok(), "{:?}", check_markup(&svg));
            proptest::prop_assert!(!svg.contains("NaN") && !svg.contains("inf") && !svg.contains('–'));
        }
    }
}
