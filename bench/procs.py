"""Starting the processes the gateway benchmarks measure: a `brisk` subcommand
that prints its URL on its first stdout line (`brisk serve`, `brisk gateway`,
`brisk canned-upstream`)."""
import re
import subprocess
import sys


def start(cmd):
    """Starts `cmd`; returns (process, "http://127.0.0.1:PORT"), or exits with
    what the process printed when it did not start."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    m = re.search(r"http://[^:]+:(\d+)", line)
    if not m:
        p.kill()
        sys.exit(f"did not start: {cmd} -> {line!r}")
    return p, f"http://127.0.0.1:{m.group(1)}"
