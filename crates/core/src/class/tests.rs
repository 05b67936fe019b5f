use std::path::Path;

use super::*;

fn err(text: &str) -> String {
    Class::parse(text, Path::new("my-class.toml"))
        .map(|_| String::new())
        .unwrap_or_else(|e| e.to_string())
}

#[test]
fn the_lab_class_is_the_lab_s_students() {
    let lab = Class::lab();
    assert_eq!(lab.name, "lab");
    let p = &lab.person;
    assert_eq!((p.pause_s.min(), p.pause_s.max()), (20.0, 90.0));
    assert_eq!(p.follow_ups.mean(), 3.0);
    assert!(p.session_s.is_none() && !p.next_session);
    let t = &lab.agent.tool_s;
    assert_eq!((t.build_test.min(), t.build_test.max()), (3.0, 12.0));
    assert_eq!(lab.agent.first_test_fails, 0.3);
    assert_eq!(*lab, Class::load("lab").expect("by name"));
}

#[test]
fn a_written_class_reads_back_equal() {
    let mut c = (*Class::lab()).clone();
    c.name = "learned \"here\"".into();
    c.person.session_s = Distribution::from_observations("s", &[60.0, 3600.5, 120.25], 64);
    c.agent.appended_tokens =
        Distribution::from_observations("a", &(0..500).map(f64::from).collect::<Vec<_>>(), 64);
    c.person.next_session = true;
    let text = write::to_toml(&c);
    let back = Class::parse(&text, Path::new("w.toml")).expect(&text);
    assert_eq!(back, c, "{text}");
}

#[test]
fn errors_name_the_file_and_the_field() {
    let lab = write::to_toml(&Class::lab());
    let share: String = lab
        .lines()
        .find(|l| l.starts_with("subagent_share = "))
        .expect("the share")
        .into();
    let e = err(&lab.replace(&share, "subagent_share = 1.5"));
    assert!(
        e.contains("my-class.toml") && e.contains("agent.subagent_share"),
        "{e}"
    );
    let e = err(&lab.replace("[agent.tool_s.bash]", "[agent.tool_s.bash]\nunit = \"s\""));
    assert!(e.contains("unknown key agent.tool_s.bash.unit"), "{e}");
    let e = err(&lab.replace("value = 3.0", "value = 3.0\nsamples = [1, 2]"));
    assert!(e.contains("person.follow_ups needs exactly one"), "{e}");
    let e = err(&lab.replace(
        "quantiles = [[0.0, 20.0], [1.0, 90.0]]",
        "quantiles = [[0.0, 90.0], [1.0, 20.0]]",
    ));
    assert!(e.contains("person.pause_s: quantiles[1]"), "{e}");
    let e = err(&lab.replace("[person]", "[person]\nnext_session = \"yes\""));
    assert!(
        e.contains("person.next_session must be true or false"),
        "{e}"
    );
    let e = err(&lab.replace("schema_version = 3", "schema_version = 9"));
    assert!(e.contains("schema_version 9"), "{e}");
    let e = err("schema_version = 1\nname = \"x\"\n[person]\n");
    assert!(e.contains("person.pause_s is missing"), "{e}");
    let e = err("schema_version = [");
    assert!(e.contains("not valid TOML (line 1)"), "{e}");
    assert!(!e.contains('\n'), "{e}");
    let e = Class::load("nope").unwrap_err().to_string();
    assert!(e.contains("--class") && e.contains("lab"), "{e}");
    let e = Class::load("missing/class.toml").unwrap_err().to_string();
    assert!(e.contains("missing/class.toml"), "{e}");
}

#[test]
fn sessions_drawn_whole_read_back_and_need_schema_3() {
    let mut c = (*Class::lab()).clone();
    c.agent.sessions =
        SessionShapes::from_rows("rows \"here\"", vec![vec![14, 3, 41], vec![1], vec![2, 2]]);
    let text = write::to_toml(&c);
    assert!(text.contains("schema_version = 3"), "{text}");
    let back = Class::parse(&text, Path::new("w.toml")).expect(&text);
    assert_eq!(back, c, "{text}");
    // The longest row, less its first request, bounds the follow-ups.
    assert_eq!(back.most_follow_ups(), 2);
    assert_eq!(
        Class::lab().most_follow_ups(),
        Class::lab().person.follow_ups.max() as u32
    );
    // An older file with the newer field is refused, naming both.
    let e = err(&text.replace("schema_version = 3", "schema_version = 2"));
    assert!(e.contains("agent.sessions needs schema_version 3"), "{e}");
    let e = err(&text.replace("  [1],", "  [0],"));
    assert!(e.contains("agent.sessions.calls[1][0]"), "{e}");
    let e = err(&text.replace("  [1],", "  [],"));
    assert!(e.contains("agent.sessions: calls[1] is empty"), "{e}");
    let e = err(&text.replace("calls = [", "rows = 1\ncalls = ["));
    assert!(e.contains("agent.sessions.rows"), "{e}");
}

#[test]
fn files_of_every_earlier_schema_still_read() {
    // The embedded lab class is a schema 1 file; schema 2 is the same
    // with the fields schema 2 added, here none.
    let lab_text = EMBEDDED_CLASSES[0].1;
    assert!(lab_text.contains("schema_version = 1"));
    let lab = Class::parse(lab_text, Path::new("lab.toml")).expect("schema 1");
    assert!(lab.agent.sessions.is_none());
    let two = write::to_toml(&lab).replace("schema_version = 3", "schema_version = 2");
    assert_eq!(Class::parse(&two, Path::new("two.toml")).expect(&two), lab);
    let one = two.replace("schema_version = 2", "schema_version = 1");
    assert_eq!(Class::parse(&one, Path::new("one.toml")).expect(&one), lab);
}

#[test]
fn sessions_with_prompt_sizes_read_back_and_bad_sizes_are_named() {
    use sessions::RequestPrompt;
    let sized = |first, last| RequestPrompt { first, last };
    let mut c = (*Class::lab()).clone();
    c.agent.sessions = SessionShapes::from_rows_and_prompts(
        "rows",
        vec![
            (
                vec![4, 2],
                Some(vec![sized(9_000, 21_000), sized(23_000, 24_500)]),
            ),
            (vec![1], Some(vec![sized(8_700, 8_700)])),
        ],
    );
    let text = write::to_toml(&c);
    assert!(
        text.contains("first_prompt_tokens = [\n  [9000, 23000],\n  [8700],\n]"),
        "{text}"
    );
    assert!(
        text.contains("last_prompt_tokens = [\n  [21000, 24500],\n  [8700],\n]"),
        "{text}"
    );
    let back = Class::parse(&text, Path::new("w.toml")).expect(&text);
    assert_eq!(back, c, "{text}");
    let shapes = back.agent.sessions.as_ref().unwrap();
    assert_eq!(shapes.prompt_tokens_at(0, 0, 1), Some(13_000));
    // One without the other, a row of another length, a zero: named.
    let e = err(&text.replace("last_prompt_tokens", "x_prompt_tokens"));
    assert!(
        e.contains("agent.sessions.x_prompt_tokens is not a field"),
        "{e}"
    );
    let without_last = text.replace(
        "last_prompt_tokens = [\n  [21000, 24500],\n  [8700],\n]\n",
        "",
    );
    let e = err(&without_last);
    assert!(
        e.contains("agent.sessions.last_prompt_tokens is missing"),
        "{e}"
    );
    let e = err(&text.replace("  [8700],\n]\nlast", "  [8700, 5],\n]\nlast"));
    assert!(e.contains("must have the same rows and lengths"), "{e}");
    let e = err(&text.replace("[9000, 23000]", "[0, 23000]"));
    assert!(
        e.contains("agent.sessions.first_prompt_tokens[0][0] must be a whole number ≥ 1"),
        "{e}"
    );
    let e = err(&text
        .replace("[9000, 23000]", "[9000, 23000, 1]")
        .replace("[21000, 24500]", "[21000, 24500, 1]"));
    assert!(
        e.contains("first_prompt_tokens[0] has 3 requests, calls[0] 2"),
        "{e}"
    );
}
