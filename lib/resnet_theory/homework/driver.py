r"""The driver: the trusted process that runs a submission's cells on its kernel.

The grader (:func:`resnet_theory.homework.sandbox.run_submission`) starts the
kernel in one sandbox and this driver in a second one, which the kernel cannot
see: another PID namespace, a read-only view of the kernel's sockets, an output
file the kernel's sandbox does not contain. The driver makes itself
non-dumpable, connects to the kernel over ZeroMQ on Unix sockets, runs the
cells (:func:`execute`) with a time limit and an output budget that counts every
message the kernel sends (outputs, ``clear_output``, display updates, comm
messages), asks the kernel to export the answer variables as data
(:func:`export_source`), and prints its result signed with a key only the
grader and the driver know.

This file is started on its own (``python -c`` loading this file alone, see
``resnet_theory.homework.sandbox``): it imports nothing of the package, so that
a submission's run does not pay for importing NumPy, the checks and the rest.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import math
import re
import resource
import secrets
import select
import signal
import sys
from dataclasses import dataclass
from time import monotonic

import nbformat

__all__ = ["execute", "export_source", "safe_error", "sign_result", "driver_cli",
           "driver_main", "add_driver_arguments", "OUTER_MARGIN", "MESSAGE_COST"]

#: Seconds the whole run may take beyond the notebook's time limit (start-up, export).
OUTER_MARGIN = 60.0
#: Bytes charged to the output budget for every message, besides its content, so that
#: a flood of small messages (``clear_output``, display updates, comm messages) runs
#: out of budget like a flood of text.
MESSAGE_COST = 500
_MANIFEST_LIMIT = 200_000
_REPORT_LIMIT = 5000
_REPORT_TOTAL = 100_000


@dataclass(frozen=True)
class DriverLimits:
    """The limits the driver enforces (those of
    :class:`resnet_theory.homework.sandbox.Limits` it needs)."""

    timeout: float
    max_output_bytes: int
    answer_bytes: int


def one_line(text, limit=300):
    """``text`` on one line, at most ``limit`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def sign_result(key, payload):
    """The HMAC-SHA256 (hexadecimal) of a result, under the run's key."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hmac.new(key.encode(), text.encode(), hashlib.sha256).hexdigest()


def _attached_kernel_manager(connection, alive_fd):
    """A kernel manager for a kernel the grader started (it never starts or kills one)."""
    import ipykernel.kernelspec
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_client.provisioning import KernelProvisionerBase

    class Attached(KernelProvisionerBase):
        """The kernel is alive while the grader's pipe stays open."""

        @property
        def has_process(self):
            return True

        async def poll(self):
            readable, _, _ = select.select([alive_fd], [], [], 0)
            return 1 if readable else None

        async def wait(self):
            while await self.poll() is None:
                await asyncio.sleep(0.1)
            return 1

        async def send_signal(self, signum):
            pass

        async def kill(self, restart=False):
            pass

        async def terminate(self, restart=False):
            pass

        async def launch_kernel(self, cmd, **kwargs):
            return connection

        async def cleanup(self, restart=False):
            pass

    class Specs(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            spec = dict(ipykernel.kernelspec.get_kernel_dict())
            spec["interrupt_mode"] = "message"  # no signals across the sandboxes
            return KernelSpec(resource_dir=ipykernel.kernelspec.RESOURCES, **spec)

    class AttachedManager(AsyncKernelManager):
        async def start_kernel(self, **kwargs):
            self.kernel_id = self.kernel_id or "graded"
            self.provisioner = Attached(kernel_id=self.kernel_id,
                                        kernel_spec=self.kernel_spec, parent=self)
            self._connect_control_socket()

        async def shutdown_kernel(self, now=False, restart=False):
            self._close_control_socket()  # the grader kills the sandbox

        async def cleanup_resources(self, restart=False):
            self._close_control_socket()

    manager = AttachedManager(kernel_name="python3", kernel_spec_manager=Specs())
    manager.load_connection_info(connection)
    return manager


class OutputBudgetExceeded(Exception):
    """Raised while a cell runs when the kernel's messages exceed the budget."""


def _make_client(notebook, manager, max_output_bytes):
    from nbclient import NotebookClient

    class LimitedClient(NotebookClient):
        """nbclient with a budget for the kernel's messages, on a kernel the grader started."""

        def create_kernel_manager(self):
            self.km = manager
            return self.km

        def process_message(self, msg, cell, cell_index):
            # Every message but the kernel's status is charged to the budget: its content,
            # its binary buffers and MESSAGE_COST; past the budget the cell is interrupted
            # and nothing but status messages is processed (nothing is kept in memory).
            if msg.get("msg_type") != "status":
                try:
                    size = len(json.dumps(msg.get("content", {})))
                except (TypeError, ValueError, RecursionError):
                    size = MESSAGE_COST
                for buffer in msg.get("buffers") or ():
                    size += getattr(buffer, "nbytes", None) or len(buffer)
                self.output_bytes += size + MESSAGE_COST
                if self.output_bytes > self.output_budget:
                    if not self.output_exceeded:
                        self.output_exceeded = True
                        asyncio.ensure_future(self._interrupt())
                    # Stop reading the cell's messages: the loop is free for the interrupt
                    # (a flood that never waits would starve it), and nothing more is kept.
                    raise OutputBudgetExceeded()
            return super().process_message(msg, cell, cell_index)

        async def _interrupt(self):
            try:
                await self.km.interrupt_kernel()
            except Exception:  # the kernel may be gone already
                pass

    timeout_name = f"GraderTimeout{secrets.token_hex(8)}"  # the kernel cannot forge it
    client = LimitedClient(
        notebook, kernel_name="python3", allow_errors=True, record_timing=False,
        interrupt_on_timeout=True, startup_timeout=40, iopub_timeout=4,
        error_on_timeout={"ename": timeout_name, "evalue": "time limit", "traceback": []})
    client.output_bytes, client.output_budget, client.output_exceeded = 0, max_output_bytes, False
    client.timeout_name = timeout_name
    return client


def export_source(variables, nonce, directory, answer_bytes):
    """The code cell that exports the answer variables as data (runs in the kernel).

    Parameters
    ----------
    variables : list of str
        The answer variables.
    nonce : str
        Frames the printed manifest and names the export directory.
    directory : str
        Where to create the export directory (inside the sandbox).
    answer_bytes : int
        The largest answer written.

    Returns
    -------
    str
        Python source. For each variable it writes ``<variable>.json`` (``None``,
        ``bool``, ``int``, ``float``, ``str`` and lists, tuples and string-keyed
        dicts of them; other real numbers, such as fractions, SymPy numbers or
        NumPy numbers inside containers, become ``int`` or ``float``) or
        ``<variable>.npy`` (a NumPy array or scalar of boolean, integer, float
        or complex type) and prints the manifest ``{variable:
        "json" | "npy" | "npy-scalar" | "missing" | "error: <why>"}``. Nothing
        here is trusted: the grader re-reads every file with its own limits.
    """
    return f"""
def _export_{nonce}():
    import json, numbers, os, sys
    import numpy
    names = {list(variables)!r}
    limit = {int(answer_bytes)}
    folder = os.path.join({directory!r}, "export-{nonce}")
    os.mkdir(folder)
    namespace = globals()
    def plain(value, depth=0):
        if depth > 20:
            raise ValueError("nested more than 20 levels deep")
        if value is None or type(value) in (bool, int, float, str):
            return value
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return int(value)
        if isinstance(value, numbers.Real):
            return float(value)
        if type(value) in (list, tuple):
            return [plain(item, depth + 1) for item in value]
        if type(value) is dict and all(type(key) is str for key in value):
            return {{key: plain(item, depth + 1) for key, item in value.items()}}
        if isinstance(value, numpy.generic) and value.dtype.kind in "biuf":
            return value.item()
        if isinstance(value, numpy.ndarray) and value.dtype.kind in "biuf":
            if value.nbytes > limit:
                raise ValueError(f"an array of {{value.nbytes}} bytes is larger than {{limit}}")
            return value.tolist()
        raise TypeError(f"a {{type(value).__name__}} is not data (numbers, strings, "
                        "lists, NumPy arrays)")
    manifest = {{}}
    for name in names:
        if name not in namespace:
            manifest[name] = "missing"
            continue
        value = namespace[name]
        try:
            if isinstance(value, (numpy.ndarray, numpy.generic)) and (
                    value.dtype.kind in "biufc"):
                array = numpy.array(value)
                if array.nbytes > limit:
                    raise ValueError(f"an array of {{array.nbytes}} bytes is larger than "
                                     f"the limit of {{limit}} bytes")
                numpy.save(os.path.join(folder, name + ".npy"), array, allow_pickle=False)
                manifest[name] = "npy-scalar" if isinstance(value, numpy.generic) else "npy"
            else:
                text = json.dumps(plain(value))
                if len(text) > limit:
                    raise ValueError(f"the answer takes {{len(text)}} bytes as JSON, more "
                                     f"than the limit of {{limit}} bytes")
                with open(os.path.join(folder, name + ".json"), "w") as handle:
                    handle.write(text)
                manifest[name] = "json"
        except Exception as error:
            manifest[name] = "error: " + (type(error).__name__ + ": " + str(error))[:300]
    sys.stdout.write("{nonce}" + json.dumps(manifest) + "{nonce}\\n")
    sys.stdout.flush()
_export_{nonce}()
del _export_{nonce}
"""


_EXCEPTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,60}")
_UNSAFE_MESSAGE = re.compile(r"[^A-Za-z0-9 _.,:;'\"()\[\]/<>%+*-]")


def safe_error(ename, evalue):
    """``"<name>: <message>"`` of a kernel's exception, filtered for a report.

    The kernel sends both, so both are untrusted: the name must look like a
    Python class name (else "an exception"), the message keeps only letters,
    digits, spaces and plain punctuation (others become ``?``), at most 80
    characters, on one line.

    Examples
    --------
    >>> safe_error("RuntimeError", "boom")
    'RuntimeError: boom'
    >>> safe_error("=HYPERLINK(1)", "\\x1b[2J=cmd|' /C calc'!A0")
    "an exception: ?[2J?cmd?' /C calc'?A0"
    """
    name = ename if isinstance(ename, str) and _EXCEPTION_NAME.fullmatch(ename) else \
        "an exception"
    message = one_line(_UNSAFE_MESSAGE.sub("?", evalue if isinstance(evalue, str) else ""),
                        80)
    return f"{name}: {message}" if message else name


def _prctl_not_dumpable():
    """``prctl(PR_SET_DUMPABLE, 0)``: no ``/proc/<pid>/mem`` or ``fd`` for the same user;
    and ``PR_SET_PDEATHSIG``: the driver dies with the grader."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _set_limits(memory_bytes, file_bytes, cpu_seconds):
    """``setrlimit`` on the driver."""
    for kind, value in [(resource.RLIMIT_AS, memory_bytes), (resource.RLIMIT_FSIZE, file_bytes),
                        (resource.RLIMIT_CPU, cpu_seconds)]:
        _, hard = resource.getrlimit(kind)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(kind, (value, value))


def _output_text(cell):
    """What a code cell printed and displayed, as text."""
    parts = []
    for output in cell.get("outputs", []):
        kind = output.get("output_type")
        if kind == "stream":
            parts.append(str(output.get("text", "")))
        elif kind in ("execute_result", "display_data"):
            text = output.get("data", {}).get("text/plain", "")
            parts.append((text if isinstance(text, str) else "".join(map(str, text))) + "\n")
        elif kind == "error":
            parts.append(f"{output.get('ename', '')}: {output.get('evalue', '')}\n")
    return "".join(parts)


def _report(notebook, cells, ran):
    """``{index: output text}`` of the cells ``cells`` the run reached (bounded)."""
    found, total = {}, 0
    for index in sorted(set(cells)):
        if index not in ran or not 0 <= index < len(notebook.cells):
            continue
        text = _output_text(notebook.cells[index])[:_REPORT_LIMIT]
        if total + len(text) > _REPORT_TOTAL:
            text = text[:max(0, _REPORT_TOTAL - total)]
        total += len(text)
        found[str(index)] = text
    return found


def execute(notebook, variables, nonce, limits, manager, export_folder, report=()):
    """Run one notebook on an attached kernel and export its answers (the driver).

    Parameters
    ----------
    notebook : nbformat.NotebookNode
        The submission.
    variables : dict
        Exercise label to answer variable.
    nonce : str
        The random text framing the export manifest.
    limits : DriverLimits
    manager : jupyter_client kernel manager
        Connected to the kernel the grader started.
    export_folder : str
        The kernel's working folder, where the export folder is created.
    report : sequence of int, optional
        Cells whose output in this run is reported (the written answers).

    Returns
    -------
    dict
        ``status``, ``reason`` (one line, written by the driver: cell numbers,
        limits, and at most an exception's filtered name and message),
        ``answers`` (variable to the manifest entry of :func:`export_source`)
        and ``outputs`` (cell index, as text, to what the cell printed and
        displayed in this run, at most 5,000 characters each and 100,000 in
        all, for the cells of ``report`` that ran).
    """
    from nbclient.exceptions import DeadKernelError

    client = _make_client(notebook, manager, limits.max_output_bytes)
    events = []

    def on_error(cell, cell_index, execute_reply):
        content = execute_reply.get("content", {})
        events.append((cell_index, content.get("ename", ""), content.get("evalue", "")))

    client.on_cell_error = on_error
    status, reasons, answers, ran = "ok", [], {}, set()
    for cell in notebook.cells:  # what the student stored is not this run's output
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    timeout = limits.timeout
    budget_end = monotonic() + timeout + OUTER_MARGIN - 5
    try:
        with client.setup_kernel():
            deadline = min(monotonic() + timeout, budget_end - 25)
            for index, cell in enumerate(notebook.cells):
                if cell.cell_type != "code":
                    continue
                remaining = deadline - monotonic()
                if remaining <= 0:
                    status = "timeout"
                    reasons.append(f"the time limit of {timeout:g} s ran out before cell {index}")
                    break
                client.timeout = max(1, math.ceil(remaining))
                before = len(events)
                ran.add(index)
                try:
                    client.execute_cell(cell, index)
                except OutputBudgetExceeded:
                    pass
                new = events[before:]
                if any(ename == client.timeout_name for _, ename, _ in new):
                    status = "timeout"
                    reasons.append(f"cell {index} was stopped at the time limit of "
                                   f"{timeout:g} s; later cells did not run")
                    break
                if client.output_exceeded:
                    status = "output-limit"
                    reasons.append(f"cell {index} sent more than {limits.max_output_bytes} "
                                   "bytes of output (every message counts); it was interrupted "
                                   "and later cells did not run")
                    break
                if new and status == "ok":
                    status = "error"
                    _, ename, evalue = new[0]
                    reasons.append(f"cell {index} raised {safe_error(ename, evalue)}")
            if variables:
                client.output_bytes, client.output_budget = 0, _MANIFEST_LIMIT
                client.output_exceeded = False
                client.timeout = max(1, min(20, math.floor(budget_end - monotonic())))
                cell = nbformat.v4.new_code_cell(export_source(
                    sorted(set(variables.values())), nonce, export_folder,
                    limits.answer_bytes))
                notebook.cells.append(cell)
                try:
                    client.execute_cell(cell, len(notebook.cells) - 1)
                except OutputBudgetExceeded:
                    pass
                text = "".join(o.get("text", "") for o in cell.outputs
                               if o.get("output_type") == "stream")
                found = re.search(rf"{nonce}(.*?){nonce}", text, re.DOTALL)
                try:
                    answers = json.loads(found.group(1)) if found else None
                except (ValueError, RecursionError):
                    answers = None
                if not isinstance(answers, dict):
                    reasons.append("the answers could not be exported")
                    answers = {}
    except DeadKernelError:
        status = "kernel-died"
        reasons.append("the kernel died (the notebook exited or killed its own process); "
                       "no answer could be exported")
        answers = {}
    except RuntimeError as error:
        if "Kernel didn't respond" not in str(error) and "kernel" not in str(error).lower():
            raise
        status = "kernel-died"
        reasons.append("the kernel did not start or stopped answering")
        answers = {}
    return {"status": status, "reason": one_line("; ".join(reasons)), "answers": answers,
            "outputs": _report(notebook, report, ran)}


def add_driver_arguments(parser):
    """The arguments of the ``_execute`` command (the driver's)."""
    parser.add_argument("--notebook", required=True)
    parser.add_argument("--export-folder", required=True)
    parser.add_argument("--timeout", type=float, required=True)
    parser.add_argument("--max-output-bytes", type=int, required=True)
    parser.add_argument("--answer-bytes", type=int, required=True)
    parser.add_argument("--alive-fd", type=int, required=True)


def driver_cli(argv=None):
    """The driver's command line, ``_execute --notebook ...`` (this file started alone)."""
    parser = argparse.ArgumentParser(prog="resnet_theory.homework")
    parser.add_argument("command", choices=["_execute"])
    add_driver_arguments(parser)
    return driver_main(parser.parse_args(argv))


def driver_main(args):
    """The ``_execute`` command: read the request, run the notebook, print a signed result."""
    _prctl_not_dumpable()
    try:
        request = json.loads(sys.stdin.readline())
        key, nonce = request["key"], request["nonce"]
        variables, connection = request["variables"], request["connection"]
        report = [int(i) for i in request.get("report", [])[:10_000]]
    except (ValueError, KeyError, TypeError):
        print("the request on standard input is missing", file=sys.stderr)
        return 2
    sys.stdin.close()
    if not re.fullmatch(r"[0-9a-f]{16,64}", nonce):
        print("the nonce is malformed", file=sys.stderr)
        return 2
    _set_limits(2 << 30, 50_000_000, int(args.timeout) + 120)
    limits = DriverLimits(timeout=args.timeout, max_output_bytes=args.max_output_bytes,
                          answer_bytes=args.answer_bytes)
    try:
        notebook = nbformat.read(args.notebook, as_version=4)
        manager = _attached_kernel_manager(connection, args.alive_fd)
        result = execute(notebook, variables, nonce, limits, manager, args.export_folder,
                         report)
    except Exception as error:  # a report, not a traceback, for the grader
        result = {"status": "grader-error",
                  "reason": f"the driver failed ({type(error).__name__})", "answers": {}}
    sys.stdout.write(json.dumps({"mac": sign_result(key, result), "payload": result}) + "\n")
    sys.stdout.flush()
    return 0
