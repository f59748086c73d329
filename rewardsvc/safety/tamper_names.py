"""The names the tamper rules look for: exit and hook functions, the modules a program
must not patch, frame walking, file reads and writes, network modules and tools. Data only."""

from __future__ import annotations

import re

# Replacing the process at import (``os.exec*``) ends the checked run as an exit does: the
# runner that was collecting never reports, and whatever the new process runs instead does.
EXITS = frozenset(
    ["sys.exit", "os._exit", "exit", "quit", "builtins.exit", "builtins.quit"]
    + [f"os.exec{suffix}" for suffix in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")]
)
HOOKS = frozenset(["atexit.register", "signal.signal", "signal.setitimer", "signal.alarm"])
PATCHED_ROOTS = frozenset(["pytest", "_pytest", "unittest", "builtins", "pluggy"])
IMPORT_STATE = ("sys.modules", "sys.meta_path", "sys.path_hooks", "builtins.__dict__")
MUTATORS = frozenset(
    [
        "__setitem__",
        "__delitem__",
        "update",
        "pop",
        "popitem",
        "setdefault",
        "clear",
        "insert",
        "append",
        "extend",
    ]
)
FRAME_CALLS = frozenset(
    [
        "sys._getframe",
        "inspect.currentframe",
        "inspect.stack",
        "inspect.getouterframes",
        "inspect.trace",
        "traceback.extract_stack",
        "traceback.walk_stack",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
    ]
)
FRAME_ATTRS = frozenset(["f_back", "f_locals", "f_globals", "tb_frame"])
READS = frozenset(
    [
        "open",
        "read_text",
        "read_bytes",
        "listdir",
        "scandir",
        "walk",
        "glob",
        "iglob",
        "rglob",
        "Path",
        "exists",
        "isfile",
        "loadtxt",
        "genfromtxt",
        "read_csv",
        "getsource",
        "getsourcelines",
        "import_module",
        "__import__",
        "run_path",
        "spec_from_file_location",
        "SourceFileLoader",
        "copy",
        "copyfile",
    ]
)
TEST_PATH = re.compile(
    r"(^|[/\\])(tests?|testing)([/\\]|$)|(^|[/\\.])test_\w*|_test(\.py)?$|conftest|expect"
    r"|\.ans$|answer|junit|report\.json|\.pytest_cache",
    re.IGNORECASE,
)
NETWORK = tuple(
    [
        "socket",
        "ssl",
        "urllib.request",
        "urllib3",
        "http.client",
        "http.server",
        "requests",
        "httpx",
        "aiohttp",
        "ftplib",
        "smtplib",
        "poplib",
        "imaplib",
        "telnetlib",
        "xmlrpc.client",
        "socketserver",
        "websocket",
        "websockets",
        "paramiko",
        "asyncio.open_connection",
        "asyncio.start_server",
        "asyncio.open_unix_connection",
    ]
)
COMMANDS = tuple(
    [
        "subprocess.",
        "os.system",
        "os.popen",
        "os.exec",
        "os.spawn",
        "os.posix_spawn",
        "pty.spawn",
        "asyncio.create_subprocess",
    ]
)
NETWORK_TOOLS = frozenset(
    [
        "curl",
        "wget",
        "nc",
        "ncat",
        "netcat",
        "ssh",
        "scp",
        "sftp",
        "telnet",
        "ftp",
        "socat",
        "ping",
        "rsync",
    ]
)
KILL_TOOLS = frozenset(["kill", "pkill", "killall"])
WRITE_MODES = frozenset("wax+")
HARMLESS_PATHS = frozenset(["/dev/null", "/dev/stdout", "/dev/stderr"])
WRITES_FIRST = frozenset(
    [
        "os.remove",
        "os.unlink",
        "os.rmdir",
        "os.removedirs",
        "os.mkdir",
        "os.makedirs",
        "os.truncate",
        "os.chmod",
        "os.chown",
        "os.lchown",
        "os.utime",
        "os.mkfifo",
        "shutil.rmtree",
        "shutil.chown",
    ]
)
WRITES_SECOND = frozenset(
    [
        "os.rename",
        "os.renames",
        "os.replace",
        "os.symlink",
        "os.link",
        "shutil.copy",
        "shutil.copy2",
        "shutil.copyfile",
        "shutil.copytree",
        "shutil.move",
    ]
)
PATH_WRITES = frozenset(
    [
        "write_text",
        "write_bytes",
        "mkdir",
        "touch",
        "unlink",
        "rmdir",
        "rename",
        "replace",
        "chmod",
        "symlink_to",
        "hardlink_to",
    ]
)
OS_WRITE_FLAGS = frozenset(["O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"])
