"""Reading results files whole and checked, writing outputs whole and never through a link, and
the scripts' error contract (main_of)."""
import json
import math
import os
import re
import signal
import stat
import sys
import tempfile


# Control characters but the newline (which gp_string turns into a line break).
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")


class BadInput(Exception):
    """A results file that cannot be read as one: a one-line message, exit 2."""


def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# A results file is a few MB at most: a larger one is not read whole.
MAX_READ = 64 << 20


def read(path):
    try:
        with open(path) as f:
            text = f.read(MAX_READ + 1)
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput("%s: cannot be read: %s" % (path, getattr(e, "strerror", None) or e))
    if len(text) > MAX_READ:
        raise BadInput("%s: more than %d MiB: not a results file" % (path, MAX_READ >> 20))
    return text


def benchmark_json(path, text):
    """(data, context) of a benchmark JSON text with a "benchmarks" list, else BadInput."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise BadInput("%s: not valid JSON (truncated?): %s" % (path, e))
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise BadInput("%s: not a benchmark JSON file (no \"benchmarks\" list)" % path)
    ctx = data.get("context", {})
    if not isinstance(ctx, dict):
        raise BadInput("%s: its \"context\" is not an object" % path)
    return data, ctx


def check_name(path, i, b):
    """BadInput unless benchmark i has a name free of control characters (terminal, gnuplot data)."""
    if not isinstance(b, dict) or not isinstance(b.get("name"), str):
        raise BadInput("%s: benchmark %d has no name" % (path, i))
    if CONTROL.search(b["name"]) or "\n" in b["name"]:
        raise BadInput("%s: benchmark %d has a control character in its name" % (path, i))


class WriteFailed(Exception):
    """An output that could not be written: a one-line message, exit 1."""


def output_kind(path, st):
    """'replace' (regular file or none) or 'through' (device, FIFO); a link to a file is refused: a
    rename would lose it or the write go elsewhere."""
    if st is not None and stat.S_ISLNK(st.st_mode):
        try:
            target = os.stat(path)
        except OSError:
            target = None
        if target is not None and (stat.S_ISCHR(target.st_mode) or stat.S_ISFIFO(target.st_mode)):
            return "through"
        raise BadInput("%s: a symbolic link to neither a device nor a FIFO: refused (give the file itself)" % path)
    if st is None or stat.S_ISREG(st.st_mode):
        return "replace"
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        return "through"
    if stat.S_ISDIR(st.st_mode):
        raise BadInput("%s: a directory, not a file" % path)
    raise BadInput("%s: neither a regular file, a character device nor a FIFO: refused" % path)


def write_output(path, data):
    """Writes data through a checked private temporary file renamed over path (a failed write leaves
    the old file whole), or straight through to a device or FIFO."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    try:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            st = None
        if output_kind(path, st) == "through":
            fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
            with open(fd, "wb") as f:
                if output_kind(path, os.fstat(f.fileno())) != "through":
                    raise BadInput("%s: changed while opened: refused" % path)
                f.write(data)
            return
        mask = os.umask(0)  # the umask is read by setting it: put back at once
        os.umask(mask)
        mode = stat.S_IMODE(st.st_mode) if st else 0o666 & ~mask
        folder, base = os.path.split(path)
        fd, tmp = tempfile.mkstemp(prefix="." + base + ".tmp.", dir=folder or ".")
    except OSError as e:
        raise WriteFailed("cannot write %s: %s" % (path, e.strerror))
    try:
        with open(fd, "wb") as f:
            own = os.fstat(f.fileno())
            if not stat.S_ISREG(own.st_mode) or own.st_nlink != 1 or own.st_uid != os.geteuid():
                raise WriteFailed("cannot write %s: its temporary file %s is not ours alone" % (path, tmp))
            os.fchmod(f.fileno(), mode)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            now = os.lstat(path)
        except FileNotFoundError:
            now = None
        if now is not None and not stat.S_ISREG(now.st_mode):
            raise WriteFailed("cannot write %s: it is no longer a regular file (not replaced)" % path)
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise WriteFailed("cannot write %s: %s" % (path, e.strerror))
    finally:
        if tmp:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def place(src, dest):
    """Puts src (plot.sh's PNG) at dest as write_output writes."""
    try:
        with open(src, "rb") as f:
            data = f.read()
    except OSError as e:
        raise WriteFailed("cannot read %s: %s" % (src, e.strerror))
    write_output(dest, data)
    return 0


PROG = "results.py"  # what starts a warning line: the script run (main_of sets it)


def main_of(run, prog, argv):
    """run(argv)'s exit status: --as=NAME starts error lines; bad input one line, exit 2; a failed write
    (a file, stdout) one line, exit 1."""
    global PROG
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # | head: end quietly
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: no traceback
    if len(argv) > 1 and argv[1].startswith("--as="):
        prog = argv.pop(1)[len("--as="):]
    PROG = prog
    try:
        rc = run(argv)
        sys.stdout.flush()
        return rc
    except BadInput as e:
        sys.stderr.write("%s: %s\n" % (prog, e))
        return 2
    except WriteFailed as e:
        sys.stderr.write("%s: %s\n" % (prog, e))
        return 1
    except OSError as e:
        if e.filename is not None:
            sys.stderr.write("%s: %s: %s\n" % (prog, e.filename, e.strerror))
        else:
            sys.stderr.write("%s: cannot write to stdout: %s\n" % (prog, e.strerror))
            # what stdout still buffers goes nowhere: no second complaint at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
