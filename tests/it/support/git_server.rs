//! A Git server over HTTP on 127.0.0.1, for Flux's image-automation-controller to clone from
//! and push to: Git's own `git http-backend` (CGI, shipped with git) behind the in-test HTTP
//! server, serving bare repositories under a temporary root, pushes allowed.

use crate::support::fault_server::{FaultServer, Reply, Seen};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct GitServer {
    pub server: FaultServer,
    root: tempfile::TempDir,
}

/// `git` with an identity, in `dir`.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=test", "-c", "user.email=test@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// One request through `git http-backend`.
fn cgi(root: &Path, seen: &Seen) -> Reply {
    let (path, query) = seen.target.split_once('?').unwrap_or((&seen.target, ""));
    let mut command = Command::new("git");
    command
        .arg("http-backend")
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", &seen.method)
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("CONTENT_TYPE", seen.header("Content-Type").unwrap_or(""))
        .env("CONTENT_LENGTH", seen.body.len().to_string())
        // receive-pack (push) is served to an authenticated user only.
        .env("REMOTE_USER", "flux")
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(protocol) = seen.header("Git-Protocol") {
        command.env("HTTP_GIT_PROTOCOL", protocol);
    }
    let mut child = command.spawn().expect("git http-backend runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&seen.body)
        .expect("the request body goes to git");
    let out = child.wait_with_output().expect("git http-backend ends");
    let split = out
        .stdout
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4))
        .or_else(|| {
            out.stdout
                .windows(2)
                .position(|w| w == b"\n\n")
                .map(|i| (i, 2))
        });
    let Some((end, sep)) = split else {
        return Reply::status(500).body(out.stderr);
    };
    let head = String::from_utf8_lossy(&out.stdout[..end]).into_owned();
    let mut reply = Reply::status(200).body(out.stdout[end + sep..].to_vec());
    for line in head.lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        match name.trim() {
            "Status" => {
                reply.status = value.trim()[..3].parse().unwrap_or(500);
            }
            name => reply = reply.header(name, value.trim()),
        }
    }
    reply
}

impl GitServer {
    pub async fn start() -> GitServer {
        let root = tempfile::tempdir().unwrap();
        let served: PathBuf = root.path().to_path_buf();
        let server = FaultServer::start(move |seen| cgi(&served, seen)).await;
        GitServer { server, root }
    }

    /// The clone URL of repository `name`.
    pub fn url(&self, name: &str) -> String {
        format!("http://{}/{name}.git", self.server.host())
    }

    fn bare(&self, name: &str) -> PathBuf {
        self.root.path().join(format!("{name}.git"))
    }

    /// A new repository `name` whose `main` holds `files` in one commit.
    pub fn create(&self, name: &str, files: &[(&str, &str)]) {
        let bare = self.bare(name);
        git(
            self.root.path(),
            &["init", "-q", "--bare", "-b", "main", bare.to_str().unwrap()],
        );
        let work = tempfile::tempdir().unwrap();
        git(work.path(), &["init", "-q", "-b", "main"]);
        for (path, text) in files {
            let file = work.path().join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        }
        git(work.path(), &["add", "."]);
        git(work.path(), &["commit", "-q", "-m", "initial"]);
        git(work.path(), &["push", "-q", bare.to_str().unwrap(), "main"]);
    }

    /// `path` as `branch` of repository `name` has it now.
    pub fn read(&self, name: &str, branch: &str, path: &str) -> String {
        git(&self.bare(name), &["show", &format!("{branch}:{path}")])
    }

    /// The subjects of `branch`'s commits, newest first.
    pub fn subjects(&self, name: &str, branch: &str) -> Vec<String> {
        git(&self.bare(name), &["log", "--format=%s", branch])
            .lines()
            .map(str::to_string)
            .collect()
    }
}
