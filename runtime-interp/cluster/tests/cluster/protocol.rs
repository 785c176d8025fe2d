use lpk_cluster::conn::{Redis, Script};
use lpk_cluster::protocol::{create_queue, Keys, COMPLETE, GROUP, RECLAIM, RENEW, RUNS};
use lpk_test_support::services;
use std::time::Duration;

fn fresh_run(r: &mut Redis, tag: &str, total: u64) -> (String, Keys) {
    let run = format!(
        "t{tag}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    );
    let keys = Keys::new(&run);
    let _: () = r
        .query(
            redis::cmd("HSET")
                .arg(keys.meta())
                .arg("id")
                .arg(&run)
                .arg("state")
                .arg("running")
                .arg("total")
                .arg(total)
                .arg("done")
                .arg(0),
            "test setup",
        )
        .expect("HSET");
    create_queue(r, &keys).expect("XGROUP");
    let _: () = r
        .query(redis::cmd("SADD").arg(RUNS).arg(&run), "test setup")
        .expect("SADD");
    (run, keys)
}

/// Adds one task to the run's ready stream and has worker `a` read it;
/// returns its entry id.
fn add_and_read(r: &mut Redis, keys: &Keys) -> String {
    let id: String = r
        .query(
            redis::cmd("XADD")
                .arg(keys.queue())
                .arg("*")
                .arg("t")
                .arg("0:"),
            "t",
        )
        .expect("XADD");
    let _: redis::Value = r
        .query(
            redis::cmd("XREADGROUP")
                .arg("GROUP")
                .arg(GROUP)
                .arg("a")
                .arg("STREAMS")
                .arg(keys.queue())
                .arg(">"),
            "t",
        )
        .expect("XREADGROUP");
    id
}

/// Runs COMPLETE with these arguments; returns the tiles it says to delete.
fn complete_deleting(r: &mut Redis, s: &Script, args: &[&str]) -> Vec<String> {
    let v: Vec<redis::Value> = r.script(s, args, "complete").expect("COMPLETE");
    v.iter()
        .skip(3)
        .map(|x| match x {
            redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
            other => format!("{other:?}"),
        })
        .collect()
}

fn complete(
    r: &mut Redis,
    s: &Script,
    keys: &Keys,
    task: &str,
    edges: &[(&str, &str, u32)],
) -> (i64, i64, String) {
    let mut args: Vec<String> = vec![
        keys.prefix.clone(),
        String::new(),
        task.into(),
        "0".into(),
        "0".into(),
        edges.len().to_string(),
    ];
    for (c, t, d) in edges {
        args.extend([c.to_string(), t.to_string(), d.to_string()]);
    }
    args.push("0".into());
    args.push("0".into());
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    r.script(s, &a, "complete").expect("COMPLETE")
}

fn int(r: &mut Redis, cmd: &mut redis::Cmd) -> i64 {
    r.query(cmd, "test").expect("a reply")
}

/// The entries in the run's ready stream.
fn queued(r: &mut Redis, keys: &Keys) -> i64 {
    int(r, redis::cmd("XLEN").arg(keys.queue()))
}

/// The run's count of done tasks.
fn done_count(r: &mut Redis, keys: &Keys) -> i64 {
    int(r, redis::cmd("HGET").arg(keys.meta()).arg("done"))
}

#[test]
fn completing_counts_each_edge_once_and_releases_each_child_once() {
    let mut r = Redis::open(&services::redis_url()).expect("the test Redis");
    let s = Script::new(COMPLETE);
    let (run, keys) = fresh_run(&mut r, "c", 3);
    // Child 2:0 reads tile 0:0 from 0:0 and tile 0:1 from 1:0.
    let (from_0, from_1) = ([("2:0", "0:0", 2)], [("2:0", "0:1", 2)]);
    // (newly done, children released, the run's state).
    let running = |fresh: i64, released: i64| (fresh, released, "running".to_string());
    assert_eq!(complete(&mut r, &s, &keys, "0:0", &from_0), running(1, 0));
    // The same completion again (the task ran twice): nothing changes.
    assert_eq!(complete(&mut r, &s, &keys, "0:0", &from_0), running(0, 0));
    let child_edges = format!("{}e:2:0", keys.prefix);
    assert_eq!(int(&mut r, redis::cmd("SCARD").arg(&child_edges)), 1);
    assert_eq!(queued(&mut r, &keys), 0);
    // The second parent releases the child, once.
    assert_eq!(complete(&mut r, &s, &keys, "1:0", &from_1), running(1, 1));
    assert_eq!(complete(&mut r, &s, &keys, "1:0", &from_1), running(0, 0));
    assert_eq!(queued(&mut r, &keys), 1);
    // A late duplicate edge reported by another task does not release again.
    assert_eq!(complete(&mut r, &s, &keys, "0:0", &from_0).1, 0);
    assert_eq!(queued(&mut r, &keys), 1);
    assert_eq!(int(&mut r, redis::cmd("EXISTS").arg(&child_edges)), 0);
    assert_eq!(done_count(&mut r, &keys), 2);
    // The last task finishes the run and takes it off the list.
    assert_eq!(complete(&mut r, &s, &keys, "2:0", &[]), running(1, 0));
    let state: String = r
        .query(redis::cmd("HGET").arg(keys.meta()).arg("state"), "t")
        .expect("state");
    assert_eq!(state, "done");
    assert_eq!(int(&mut r, redis::cmd("SISMEMBER").arg(RUNS).arg(&run)), 0);
    // Completions after the end only acknowledge.
    assert_eq!(
        complete(&mut r, &s, &keys, "2:0", &[]),
        (0, 0, "done".into())
    );
    assert_eq!(done_count(&mut r, &keys), 3);
}

#[test]
fn leases_are_renewed_by_their_holder_and_taken_over_when_they_expire() {
    let mut r = Redis::open(&services::redis_url()).expect("the test Redis");
    let renew = Script::new(RENEW);
    let reclaim = Script::new(RECLAIM);
    let (_run, keys) = fresh_run(&mut r, "l", 1);
    let id = add_and_read(&mut r, &keys);
    std::thread::sleep(Duration::from_millis(150));
    // The holder renews: a 100 ms lease has not expired right after.
    let lost: Vec<String> = r
        .script(&renew, &[&keys.prefix, "a", &id], "renew")
        .expect("RENEW");
    assert!(lost.is_empty());
    let got: Vec<(String, String, i64)> = r
        .script(&reclaim, &[&keys.prefix, "b", "100", "10"], "reclaim")
        .expect("RECLAIM");
    assert!(got.is_empty(), "renewed lease taken over: {got:?}");
    // Not renewed: it expires and another worker takes it, second delivery.
    std::thread::sleep(Duration::from_millis(150));
    let got: Vec<(String, String, i64)> = r
        .script(&reclaim, &[&keys.prefix, "b", "100", "10"], "reclaim")
        .expect("RECLAIM");
    assert_eq!(got, vec![(id.clone(), "0:".to_string(), 2)]);
    // The old holder's renewal now reports it lost and takes nothing back.
    let lost: Vec<String> = r
        .script(&renew, &[&keys.prefix, "a", &id], "renew")
        .expect("RENEW");
    assert_eq!(lost, vec![id.clone()]);
    let pending: Vec<(String, String, u64, u64)> = r
        .query(
            redis::cmd("XPENDING")
                .arg(keys.queue())
                .arg(GROUP)
                .arg("-")
                .arg("+")
                .arg(10),
            "t",
        )
        .expect("XPENDING");
    assert_eq!(pending.len(), 1);
    assert_eq!((pending[0].1.as_str(), pending[0].3), ("b", 2));
}

#[test]
fn completing_a_task_of_an_unknown_run_leaves_its_entry_pending() {
    let mut r = Redis::open(&services::redis_url()).expect("the test Redis");
    let s = Script::new(COMPLETE);
    let (_run, keys) = fresh_run(&mut r, "u", 2);
    let id = add_and_read(&mut r, &keys);
    // The record is gone (Redis lost it, `lpkc resume` has not written it yet).
    let _: () = r
        .query(redis::cmd("DEL").arg(keys.meta()), "t")
        .expect("DEL");
    let args = [
        keys.prefix.as_str(),
        id.as_str(),
        "0:",
        "0",
        "0",
        "0",
        "0",
        "0",
    ];
    let got: (i64, i64, String) = r.script(&s, &args, "complete").expect("COMPLETE");
    assert_eq!(got, (0, 0, String::new()));
    assert_eq!(queued(&mut r, &keys), 1, "the entry was deleted");
    assert_eq!(int(&mut r, redis::cmd("SCARD").arg(keys.done())), 0);
}

#[test]
fn the_last_reader_of_a_tile_deletes_it_once() {
    let mut r = Redis::open(&services::redis_url()).expect("the test Redis");
    let s = Script::new(COMPLETE);
    let (_run, keys) = fresh_run(&mut r, "d", 3);
    let _: () = r
        .query(
            redis::cmd("HSET")
                .arg(keys.meta())
                .arg("stored_bytes")
                .arg(100)
                .arg("peak_bytes")
                .arg(100),
            "t",
        )
        .expect("HSET");
    // Tasks 0: and 1: read tile 5:0 (100 bytes, 2 readers); each writes 10.
    let call = |r: &mut Redis, task: &str| -> Vec<String> {
        let args = [
            keys.prefix.as_str(),
            "",
            task,
            "0",
            "10",
            "0",
            "0",
            "0",
            "5:0",
            "2",
            "100",
        ];
        complete_deleting(r, &s, &args)
    };
    assert!(call(&mut r, "0:").is_empty());
    assert!(
        call(&mut r, "0:").is_empty(),
        "a repeated completion counts once"
    );
    assert_eq!(call(&mut r, "1:"), vec!["5:0".to_string()]);
    assert!(call(&mut r, "1:").is_empty(), "deleted once");
    let stored = int(
        &mut r,
        redis::cmd("HGET").arg(keys.meta()).arg("stored_bytes"),
    );
    let peak = int(
        &mut r,
        redis::cmd("HGET").arg(keys.meta()).arg("peak_bytes"),
    );
    assert_eq!((stored, peak), (100 + 10 + 10 - 100, 120));
}

#[test]
fn a_late_copy_of_a_writer_deletes_what_it_wrote_again() {
    let mut r = Redis::open(&services::redis_url()).expect("the test Redis");
    let s = Script::new(COMPLETE);
    let (_run, keys) = fresh_run(&mut r, "g", 3);
    // Writer 0: wrote tile 5:0 (10 bytes); reader 1: its only reader.
    let complete = |r: &mut Redis, args: &[&str]| complete_deleting(r, &s, args);
    let p = keys.prefix.as_str();
    assert!(complete(&mut r, &[p, "", "0:", "0", "10", "0", "1", "5:0", "0"]).is_empty());
    assert_eq!(
        complete(
            &mut r,
            &[p, "", "1:", "0", "0", "0", "0", "0", "5:0", "1", "10"]
        ),
        vec!["5:0".to_string()]
    );
    // The writer's late copy wrote the tile again: it is to be deleted.
    assert_eq!(
        complete(&mut r, &[p, "", "0:", "0", "10", "0", "1", "5:0", "0"]),
        vec!["5:0".to_string()]
    );
    // A late copy of a tile still alive deletes nothing.
    assert!(complete(&mut r, &[p, "", "0:", "0", "10", "0", "1", "5:1", "0"]).is_empty());
    // The last task ends the run; a late copy that completes after that
    // still deletes what it wrote again (and a task the run never had,
    // nothing).
    assert!(complete(&mut r, &[p, "", "2:", "0", "0", "0", "0", "0"]).is_empty());
    let state: String = r
        .query(redis::cmd("HGET").arg(keys.meta()).arg("state"), "t")
        .expect("HGET");
    assert_eq!(state, "done");
    assert_eq!(
        complete(&mut r, &[p, "", "0:", "0", "10", "0", "1", "5:0", "0"]),
        vec!["5:0".to_string()]
    );
    assert!(complete(&mut r, &[p, "", "9:", "0", "10", "0", "1", "5:0", "0"]).is_empty());
}
