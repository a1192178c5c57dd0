#!/usr/bin/env python3
"""test_deb.py — the Debian packages of `make deb` (appliance/deb/build):
  - three packages, watchtower-edge / -hub / -cli, each with its binary in
    /usr/bin, its man page, copyright and changelog; the daemons with their
    systemd unit (ExecStart on the packaged binary and config), their
    config in /etc/watchtower as the only conffile, the config-ready helper
    and maintainer scripts that parse (`sh -n`); Depends computed from the
    binaries (libc6 among them);
  - lintian (Debian's package checker) reports no error for any of them;
  - the man pages render with no warning from man(1);
  - installed into a scratch root (dpkg -x), the binaries run: wt-edge and
    wt-hub --check-config accept the shipped example configs, wtctl
    prints its version;
  - the config-ready gate the maintainer scripts use keeps both daemons
    from starting with the example's placeholder secrets, and lets them
    start once the tokens are set (a broken config also stays stopped).
Needs dpkg-deb, dpkg-shlibdeps and lintian (appliance/install-deps).
"""
import glob
import os
import re
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.environ.get("WT_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BUILD", "build")
PKGS = ("watchtower-edge", "watchtower-hub", "watchtower-cli")


def run(*cmd, **kw):
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=300, **kw)


class DebPackages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        out = run(os.path.join(ROOT, "appliance", "deb", "build"), env=dict(os.environ, BUILD=BUILD), cwd=ROOT)
        if out.returncode != 0:
            raise AssertionError(f"appliance/deb/build failed:\n{out.stdout}\n{out.stderr}")
        cls.debs = {}
        for p in PKGS:
            found = glob.glob(os.path.join(ROOT, BUILD, "deb", f"{p}_*.deb"))
            if len(found) != 1:
                raise AssertionError(f"{p}: expected one .deb, found {found}")
            cls.debs[p] = found[0]
        cls.tmp = tempfile.mkdtemp(prefix="wt-deb-test-")
        cls.scratch = os.path.join(cls.tmp, "root")
        for d in cls.debs.values():
            out = run("dpkg-deb", "-x", d, cls.scratch)
            if out.returncode != 0:
                raise AssertionError(out.stderr)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def field(self, pkg, name):
        out = run("dpkg-deb", "-f", self.debs[pkg], name)
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout.strip()

    def contents(self, pkg):
        out = run("dpkg-deb", "-c", self.debs[pkg])
        self.assertEqual(out.returncode, 0, out.stderr)
        files = {}
        for line in out.stdout.splitlines():
            parts = line.split()
            files[parts[5].lstrip(".")] = (parts[0], parts[1])
        return files

    def control_file(self, pkg, name):
        d = os.path.join(self.tmp, "ctl-" + pkg)
        if not os.path.isdir(d):
            out = run("dpkg-deb", "-e", self.debs[pkg], d)
            self.assertEqual(out.returncode, 0, out.stderr)
        path = os.path.join(d, name)
        return open(path).read() if os.path.exists(path) else None

    def test_contents_and_control(self):
        for pkg in PKGS:
            with self.subTest(pkg=pkg):
                self.assertEqual(self.field(pkg, "Package"), pkg)
                self.assertRegex(self.field(pkg, "Version"), r"^\d")
                self.assertIn("libc6", self.field(pkg, "Depends"))
                files = self.contents(pkg)
                for path, (mode, owner) in files.items():
                    self.assertEqual(owner, "root/root", path)
                for f in (f"/usr/share/doc/{pkg}/copyright", f"/usr/share/doc/{pkg}/changelog.gz"):
                    self.assertIn(f, files)
                self.assertIsNone(self.control_file(pkg, "nonexistent"))
        for n in ("edge", "hub"):
            pkg = f"watchtower-{n}"
            files = self.contents(pkg)
            for f in (f"/usr/bin/wt-{n}", f"/lib/systemd/system/wt-{n}.service", f"/etc/watchtower/{n}.cfg",
                      f"/usr/share/man/man8/wt-{n}.8.gz", "/usr/lib/watchtower/config-ready"):
                self.assertIn(f, files, pkg)
            self.assertTrue(files[f"/usr/bin/wt-{n}"][0].startswith("-rwxr-xr-x"))
            self.assertEqual(self.control_file(pkg, "conffiles").split(), [f"/etc/watchtower/{n}.cfg"])
            # nothing under /var: data directories are made by postinst
            self.assertFalse([f for f in files if f.startswith("/var/")], pkg)
            for s in ("postinst", "prerm", "postrm"):
                text = self.control_file(pkg, s)
                self.assertIsNotNone(text, f"{pkg} {s}")
                out = run("sh", "-n", os.path.join(self.tmp, "ctl-" + pkg, s))
                self.assertEqual(out.returncode, 0, f"{pkg} {s}: {out.stderr}")
            self.assertIn("config-ready", self.control_file(pkg, "postinst"))
            unit = open(os.path.join(self.scratch, "lib", "systemd", "system", f"wt-{n}.service")).read()
            self.assertIn(f"ExecStart=/usr/bin/wt-{n} --config /etc/watchtower/{n}.cfg", unit)
            self.assertNotIn("/usr/local/", unit)
        self.assertIn("/usr/share/man/man1/wtctl.1.gz", self.contents("watchtower-cli"))
        self.assertIn("/usr/bin/wtctl", self.contents("watchtower-cli"))

    def test_lintian_reports_no_error(self):
        for pkg, deb in self.debs.items():
            with self.subTest(pkg=pkg):
                out = run("lintian", "--tag-display-limit", "0", deb)
                errors = [line for line in out.stdout.splitlines() if line.startswith("E:")]
                print(f"lintian {pkg}: rc {out.returncode}\n{out.stdout}", flush=True)
                self.assertEqual(errors, [], out.stdout)
                self.assertEqual(out.returncode, 0, out.stdout + out.stderr)

    def test_man_pages_render(self):
        for page in glob.glob(os.path.join(self.scratch, "usr", "share", "man", "man*", "*.gz")):
            with self.subTest(page=os.path.basename(page)):
                out = run("man", "--warnings", "-l", page, env=dict(os.environ, MANWIDTH="80"))
                self.assertEqual(out.returncode, 0, out.stderr)
                self.assertEqual(out.stderr.strip(), "", out.stderr)
                self.assertIn("NAME", out.stdout)

    def test_installed_binaries_run(self):
        bindir = os.path.join(self.scratch, "usr", "bin")
        for n in ("edge", "hub"):
            cfg = os.path.join(self.scratch, "etc", "watchtower", f"{n}.cfg")
            out = run(os.path.join(bindir, f"wt-{n}"), "--config", cfg, "--check-config")
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            self.assertTrue(out.stdout.startswith("ok:"), out.stdout)
        out = run(os.path.join(bindir, "wtctl"), "version")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("Watchtower", out.stdout)

    def test_config_ready_gate(self):
        gate = os.path.join(self.scratch, "usr", "lib", "watchtower", "config-ready")
        env = dict(os.environ, WT_BIN_DIR=os.path.join(self.scratch, "usr", "bin"))
        for n in ("edge", "hub"):
            with self.subTest(daemon=n):
                shipped = os.path.join(self.scratch, "etc", "watchtower", f"{n}.cfg")
                out = run(gate, n, shipped, env=env)
                self.assertEqual(out.returncode, 1, "the example config must not start a daemon")
                self.assertIn("placeholder", out.stderr)
                text = open(shipped).read()
                text = re.sub(r'"change-me[^"]*"', '"site-admin-token-7f3a9c2e41b8"', text)
                text = re.sub(r'"demo-(upload|read|admin)-token"', r'"site-\1-token-5d1e"', text)
                ready = os.path.join(self.tmp, f"{n}-ready.cfg")
                with open(ready, "w") as f:
                    f.write(text)
                out = run(gate, n, ready, env=env)
                self.assertEqual(out.returncode, 0, out.stderr)
                broken = os.path.join(self.tmp, f"{n}-broken.cfg")
                with open(broken, "w") as f:
                    f.write(text.replace("=", ":", 1).replace("{", "(", 1))
                out = run(gate, n, broken, env=env)
                self.assertEqual(out.returncode, 1, "a broken config must not start a daemon")
                self.assertTrue(out.stderr.strip())
        out = run(gate, "nope", env=env)
        self.assertEqual(out.returncode, 2)


if __name__ == "__main__":
    unittest.main()
