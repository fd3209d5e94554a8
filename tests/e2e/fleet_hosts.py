"""Hosts for the fleet's tests and its chaos bench: Linux network namespaces,
each with its own network stack, joined by veth links to one bridge (the
hosts' switch), as pods on nodes are. The process running this is the client
host, on the bridge too. Needs root and iproute2; a partition between two
hosts is nftables rules in both that drop each other's packets silently, as a
cut link does (no reset, no error: only timeouts tell).

    hosts = Hosts(["lb", "gw1", "e1"], subnet="10.77.0")
    hosts.addr["e1"]                       # "10.77.0.12"
    p = hosts.start("e1", [brisk, "serve", "--host", "0.0.0.0", "--port", "8000", ...],
                    port=8000, ready_path="/health")
    hosts.run("gw1", ["nft", "list", "ruleset"])
    hosts.cut("gw1", "e1"); hosts.heal("gw1", "e1")
    hosts.close()                           # kills what runs there, removes the hosts

Names are short (interface names have 15 bytes): the tag prefixes every
namespace, veth and the bridge, and a leftover of a killed run with the same
tag is removed first."""
import subprocess

from server_process import ServerProcess


class NamespaceError(RuntimeError):
    pass


def sh(*cmd, check=True, timeout=30):
    out = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout)
    if check and out.returncode != 0:
        raise NamespaceError(f"{' '.join(map(str, cmd))}: {out.stderr.strip()}")
    return out


def namespaces_work():
    """Whether this process can make a network namespace (root, iproute2)."""
    try:
        probe = "brisk-probe"
        sh("ip", "netns", "add", probe)
        sh("ip", "netns", "delete", probe)
        return True
    except (OSError, NamespaceError):
        return False


class Hosts:
    def __init__(self, names, subnet="10.77.0", tag="bfl"):
        self.tag, self.subnet = tag, subnet
        self.bridge = f"{tag}-br"
        self.addr = {}
        self.ns = {}
        self.cuts = set()
        self.processes = []
        self._remove_leftovers()
        try:
            sh("ip", "link", "add", self.bridge, "type", "bridge")
            sh("ip", "addr", "add", f"{subnet}.1/24", "dev", self.bridge)
            sh("ip", "link", "set", self.bridge, "up")
            for i, name in enumerate(names):
                self._add_host(i, name)
        except BaseException:
            self.close()
            raise

    def _add_host(self, i, name):
        ns = f"{self.tag}-{name}"
        veth = f"{self.tag}-v{i}"
        sh("ip", "netns", "add", ns)
        self.ns[name] = ns
        sh("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
        sh("ip", "link", "set", veth, "master", self.bridge, "up")
        addr = f"{self.subnet}.{10 + i}"
        sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", "eth0")
        sh("ip", "-n", ns, "link", "set", "eth0", "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        self.addr[name] = addr

    def _remove_leftovers(self):
        listed = sh("ip", "-o", "netns", "list", check=False).stdout.split("\n")
        for line in listed:
            ns = line.split(" ")[0]
            if ns.startswith(self.tag + "-"):
                self._kill_all_in(ns)
                sh("ip", "netns", "delete", ns, check=False)
        # A namespace lives on in the kernel while sockets of its killed processes
        # close; its veth ends are removed now, not when it goes.
        for line in sh("ip", "-o", "link", "show", check=False).stdout.splitlines():
            name = line.split(":")[1].strip().split("@")[0] if ":" in line else ""
            if name.startswith(self.tag + "-"):
                sh("ip", "link", "delete", name, check=False)

    @staticmethod
    def _kill_all_in(ns):
        pids = sh("ip", "netns", "pids", ns, check=False).stdout.split()
        if pids:
            sh("kill", "-9", *pids, check=False)

    def command(self, host, cmd):
        return ["ip", "netns", "exec", self.ns[host], *[str(c) for c in cmd]]

    def run(self, host, cmd, check=True, timeout=120, env=None):
        out = subprocess.run(self.command(host, cmd), capture_output=True, text=True,
                             timeout=timeout, env=env)
        if check and out.returncode != 0:
            raise NamespaceError(f"on {host}: {' '.join(map(str, cmd))}: {out.stderr.strip()}")
        return out

    def start(self, host, cmd, port, name=None, ready_path=None, env=None, timeout=120):
        """A server process on `host`, listening on its address and `port`."""
        p = ServerProcess(self.command(host, cmd), name or host, port=port,
                          ready_path=ready_path, env=env, timeout=timeout, host=self.addr[host])
        self.processes.append(p)
        return p

    def cut(self, a, b):
        """A partition between hosts a and b: each drops the other's packets."""
        self.cuts.add(frozenset((a, b)))
        self._apply_cuts(a)
        self._apply_cuts(b)

    def heal(self, a, b):
        self.cuts.discard(frozenset((a, b)))
        self._apply_cuts(a)
        self._apply_cuts(b)

    def _apply_cuts(self, host):
        peers = sorted(self.addr[h] for pair in self.cuts if host in pair for h in pair
                       if h != host)
        self.run(host, ["nft", "delete", "table", "inet", "partition"], check=False)
        if not peers:
            return
        addrs = ", ".join(peers)
        rules = ("table inet partition {\n"
                 f"  chain in {{ type filter hook input priority 0; ip saddr {{ {addrs} }} drop; }}\n"
                 f"  chain out {{ type filter hook output priority 0; ip daddr {{ {addrs} }} drop; }}\n"
                 "}\n")
        out = subprocess.run(self.command(host, ["nft", "-f", "-"]), input=rules,
                             capture_output=True, text=True, timeout=30)
        if out.returncode != 0:
            raise NamespaceError(f"nft on {host}: {out.stderr.strip()}")

    def close(self):
        for p in self.processes:
            if p.alive():
                p.stop(timeout=5)
        for ns in self.ns.values():
            self._kill_all_in(ns)
        self._remove_leftovers()
        self.ns = {}
