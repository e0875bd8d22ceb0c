"""`satlab phy calibrate`: PER(Es/N0) tables from a real DVB-S2 waveform.

Per point (MODCOD, frame size, pilots, Es/N0): GNU Radio's gr-dtv transmitter and gr-channels'
AWGN channel (emulator/phy/dvbs2_tx.py, run with Debian's /usr/bin/python3, the only interpreter
that imports gnuradio) write the received IQ and the transmitted BBFRAMEs; the Rust receiver
(`satlab-phy`, crates/dvbs2phy) decodes them and counts the frames whose BBFRAME is not delivered
intact. Each finished point is appended to a state file (OUT.state.jsonl) so an interrupted
calibration resumes where it stopped; the table is rewritten from the state after every point, in
the emulator's PER table format (`modcod_id,esn0_db,per`, crates/linkmodel/src/per.rs) with a
header recording the command, its parameters, the frames per point and, per row, the frame count
and the binomial 95 % (Clopper-Pearson) confidence interval.
"""

from __future__ import annotations

import hashlib
import json
import math
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scipy.stats import beta

from satlab.settings import REPO_ROOT, phy_receiver_bin

TX_SCRIPT = REPO_ROOT / "emulator" / "phy" / "dvbs2_tx.py"
MODCOD_FILE = REPO_ROOT / "crates" / "linkmodel" / "src" / "data" / "dvbs2_modcod.txt"
GR_PYTHON = "/usr/bin/python3"
# Frames per transmitter run: bounds the IQ written at once (a normal 8PSK frame is 175 kB).
BATCH = {"short": 200, "normal": 50}


class CalibrationError(Exception):
    """A bad parameter or a failed step, with a message naming it."""


def table13() -> dict[int, tuple[str, str, float]]:
    """MODCOD id -> (modulation, rate, QEF Es/N0 dB) from EN 302 307-1 Table 13."""
    out: dict[int, tuple[str, str, float]] = {}
    for line in MODCOD_FILE.read_text().splitlines():
        f = line.split("#")[0].split()
        if len(f) == 5 and f[0].isdigit():
            out[int(f[0])] = (f[1], f[2], float(f[4]))
    return out


def parse_modcods(spec: str) -> list[int]:
    """`all`, or ids and ranges: `4,12-14`."""
    if spec == "all":
        return list(range(1, 29))
    ids: list[int] = []
    for part in spec.split(","):
        try:
            if "-" in part:
                a, b = (int(x) for x in part.split("-", 1))
                ids.extend(range(a, b + 1))
            else:
                ids.append(int(part))
        except ValueError:
            raise CalibrationError(f"--modcod {spec!r}: {part!r} is not an id or a range") from None
    for i in ids:
        if not 1 <= i <= 28:
            raise CalibrationError(f"--modcod {i} is outside [1, 28]")
    return sorted(set(ids))


def parse_range(spec: str) -> list[float]:
    """`START:STOP:STEP` (STOP included), dB."""
    try:
        start, stop, step = (float(x) for x in spec.split(":"))
    except ValueError:
        raise CalibrationError(f"--esn0 {spec!r} is not START:STOP:STEP (dB)") from None
    if not 0.005 <= step <= 5:
        raise CalibrationError(f"--esn0 step {step} is outside [0.005, 5] dB")
    if stop < start:
        raise CalibrationError(f"--esn0 stop {stop} is below start {start}")
    n = int(math.floor((stop - start) / step + 1e-9)) + 1
    if n > 200:
        raise CalibrationError(f"--esn0 {spec!r} has {n} points (at most 200)")
    return [round(start + i * step, 4) for i in range(n)]


def clopper_pearson(k: int, n: int, conf: float = 0.95) -> tuple[float, float]:
    """Exact binomial confidence interval of k errors in n frames."""
    a = 1 - conf
    lo = 0.0 if k == 0 else float(beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - a / 2, k + 1, n - k))
    return lo, hi


@dataclass(frozen=True)
class Decoder:
    """The receiver's LDPC decoder: `minsum` (ours, crates/dvbs2phy/src/minsum_qc.rs: layered
    min-sum, 360 rows at a time, with the check rule max(scale x min - offset, 0); default
    offset min-sum, offset 0.4), `minsum-rows` (the same one row at a time, minsum.rs) or one
    of ldpc-toolbox's (the reference: HLTanhf32, layered sum-product). Its options' limits are
    the receiver's (check_decoder)."""

    name: str = "minsum"
    scale: float = 1.0
    offset: float = 0.4

    def is_minsum(self) -> bool:
        return self.name in ("minsum", "minsum-rows")

    def tag(self) -> str:
        """The decoder's part of a state key: points of different decoders are kept apart."""
        if not self.is_minsum():
            return self.name
        return f"{self.name}-s{self.scale:g}-o{self.offset:g}"

    def args(self) -> list[str]:
        out = ["--decoder", self.name]
        if self.is_minsum():
            out += ["--minsum-scale", f"{self.scale:g}", "--minsum-offset", f"{self.offset:g}"]
        return out

    def describe(self) -> str:
        if not self.is_minsum():
            return f"ldpc-toolbox {self.name}"
        rows = ", one row at a time" if self.name == "minsum-rows" else ""
        return f"layered min-sum (dvbs2phy{rows}), scale {self.scale:g}, offset {self.offset:g}"


def receiver() -> Path:
    """satlab-phy, or a CalibrationError saying how to build it."""
    rx = phy_receiver_bin()
    if not rx.exists():
        raise CalibrationError(
            f"{rx} is missing: build it with `cargo build --release -p dvbs2phy`"
        )
    return rx


def check_decoder(decoder: Decoder, max_iterations: int) -> None:
    """The receiver checks its decoder options (the one place their limits are kept):
    `satlab-phy --check`; its refusal, naming the option and the limit, is raised."""
    cmd = [str(receiver()), "--check", "--max-iterations", str(max_iterations)] + decoder.args()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        lines = r.stderr.strip().splitlines() or [f"exit status {r.returncode}"]
        raise CalibrationError(lines[0].removeprefix("error: ").removeprefix("satlab-phy: "))


@dataclass(frozen=True)
class Point:
    modcod: int
    frame: str
    pilots: bool
    esn0_db: float
    max_iterations: int
    decoder: Decoder = Decoder()

    def frames_key(self) -> str:
        p = "pilots" if self.pilots else "nopilots"
        return f"{self.modcod}/{self.frame}/{p}/{self.esn0_db:.4f}"

    def key(self) -> str:
        return f"{self.frames_key()}/{self.decoder.tag()}x{self.max_iterations}"

    def seed(self, batch: int) -> int:
        """Transmitter seed (TS payload, channel noise) of one batch: a table reproduces exactly,
        and every decoder meets the same frames at a point (the seed leaves the decoder out)."""
        h = hashlib.sha256(f"{self.frames_key()}/{batch}".encode()).digest()
        return int.from_bytes(h[:4], "big") & 0x7FFFFFFF


def run_point(pt: Point, frames: int, workdir: Path) -> dict[str, Any]:
    """Simulates `frames` frames at one point; returns the counts and timings."""
    rx = receiver()
    errors = done = 0
    decode_s = tx_s = cpu_s = 0.0
    iters = 0.0
    batch = 0
    while done < frames:
        n = min(BATCH[pt.frame], frames - done)
        iq, ref = workdir / "rx.iq", workdir / "ref.bin"
        tx = [GR_PYTHON, str(TX_SCRIPT), "--modcod", str(pt.modcod), "--frame", pt.frame]
        tx += ["--esn0", f"{pt.esn0_db}", "--frames", str(n), "--seed", str(pt.seed(batch))]
        tx += ["--out-iq", str(iq), "--out-ref", str(ref)] + (["--pilots"] if pt.pilots else [])
        t0 = time.monotonic()
        r = subprocess.run(tx, capture_output=True, text=True)
        tx_s += time.monotonic() - t0
        if r.returncode != 0:
            raise CalibrationError(f"transmitter failed ({shlex.join(tx)}):\n{r.stderr.strip()}")
        cmd = [str(rx), "--modcod", str(pt.modcod), "--frame", pt.frame, "--iq", str(iq)]
        cmd += ["--ref", str(ref), "--esn0", f"{pt.esn0_db}", "--quiet"]
        cmd += ["--max-iterations", str(pt.max_iterations)] + pt.decoder.args()
        cmd += ["--pilots"] if pt.pilots else []
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise CalibrationError(f"receiver failed ({shlex.join(cmd)}):\n{r.stderr.strip()}")
        summary = json.loads(r.stdout.strip().splitlines()[-1])
        if summary["frames"] != n:
            raise CalibrationError(
                f"receiver decoded {summary['frames']} of {n} frames ({shlex.join(cmd)})"
            )
        errors += summary["frame_errors"]
        decode_s += summary["decode_s"]
        cpu_s += summary["cpu_s"]
        iters += summary["mean_iterations"] * n
        done += n
        batch += 1
    iq.unlink(missing_ok=True)
    ref.unlink(missing_ok=True)
    lo, hi = clopper_pearson(errors, done)
    return {
        "key": pt.key(),
        "modcod": pt.modcod,
        "frame": pt.frame,
        "pilots": pt.pilots,
        "esn0_db": pt.esn0_db,
        "frames": done,
        "errors": errors,
        "per": errors / done,
        "ci95": [lo, hi],
        "mean_iterations": iters / done,
        "decode_s": decode_s,
        "tx_s": tx_s,
        "decoder_frames_per_s": done / decode_s if decode_s > 0 else None,
        "decoder_cpu_s": cpu_s,
    }


def load_state(path: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                rec = json.loads(line)
                out[rec["key"]] = rec
    return out


def write_table(out: Path, points: list[dict[str, Any]], header: dict[str, Any]) -> None:
    t13 = table13()
    probe = ""
    if header.get("probe_frames"):
        probe = f" ({header['probe_frames']} above the waterfall's end: --probe-frames)"
    lines = [
        "# DVB-S2 PER(Es/N0), AWGN, measured on the waveform: GNU Radio 3.10 gr-dtv transmitter",
        "# (BBHEADER, BB scrambling, BCH, LDPC, bit interleaver, EN 302 307-1 mapper, PL framing",
        "# and scrambling) -> gr-channels AWGN -> dvbs2phy receiver (max-log demapper, LDPC",
        "# decoder, BCH decoder). A frame is in error when its BBFRAME is not delivered",
        "# bit-exact. Es/N0 per PL symbol (unit-energy points).",
        f"# command: {header['command']}",
        f"# frame: {header['frame']}; pilots: {'on' if header['pilots'] else 'off'}; "
        f"frames per point: {header['frames']}{probe}; LDPC: {header['decoder']}, at most "
        f"{header['max_iterations']} layered iterations",
        "# per row: frames simulated, frame errors and the binomial 95 % confidence interval of",
        "# the PER (Clopper-Pearson); PER 0: no error in that many frames (bound in the CI).",
        "modcod_id,esn0_db,per",
    ]
    for rec in sorted(points, key=lambda r: (r["modcod"], r["esn0_db"])):
        mod, rate, _ = t13[rec["modcod"]]
        lo, hi = rec["ci95"]
        lines.append(
            f"{rec['modcod']},{rec['esn0_db']:.2f},{rec['per']:.4g}  "
            f"# {mod} {rate}: {rec['errors']}/{rec['frames']} frames, 95% CI [{lo:.3g}, {hi:.3g}]"
        )
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(out)


@dataclass
class _Run:
    """What the points of one calibration share: where they go and how they are decoded."""

    frame: str
    pilots: bool
    max_iterations: int
    decoder: Decoder
    out: Path
    header: dict[str, Any]
    state_path: Path
    state: dict[str, dict[str, Any]]
    table: dict[str, dict[str, Any]]
    workdir: Path
    log: Any

    def point(self, m: int, esn0_db: float, frames: int) -> dict[str, Any]:
        """One point with at least `frames` frames: from the state, or simulated and recorded."""
        pt = Point(m, self.frame, self.pilots, esn0_db, self.max_iterations, self.decoder)
        rec = self.state.get(pt.key())
        if rec is not None and rec["frames"] >= frames:
            self.log(f"MODCOD {m} {esn0_db:.2f} dB: done before ({rec['errors']}/{rec['frames']})")
        else:
            rec = run_point(pt, frames, self.workdir)
            with self.state_path.open("a") as f:
                f.write(json.dumps(rec) + "\n")
            self.state[pt.key()] = rec
            mod, rate, _ = table13()[m]
            lo, hi = rec["ci95"]
            self.log(
                f"MODCOD {m} ({mod} {rate}) {self.frame} Es/N0 {esn0_db:.2f} dB: "
                f"PER {rec['per']:.3g} ({rec['errors']}/{rec['frames']}, 95% CI [{lo:.3g}, "
                f"{hi:.3g}]), {rec['mean_iterations']:.1f} iterations, decoder "
                f"{rec['frames'] / rec['decoder_cpu_s']:.1f} frames per CPU second"
            )
        self.table[pt.key()] = rec
        write_table(self.out, list(self.table.values()), self.header)
        return rec

    def sweep(self, m: int, values: list[float], frames: int, stop_after_zero: int) -> int:
        """Points in order until `stop_after_zero` in a row without error; returns the index in
        `values` of the first point without error (len(values) if none)."""
        zeros, first_clean = 0, len(values)
        for i, e in enumerate(values):
            rec = self.point(m, e, frames)
            zeros = zeros + 1 if rec["errors"] == 0 else 0
            if zeros == 1:
                first_clean = min(first_clean, i)
            if stop_after_zero and zeros >= stop_after_zero:
                break
        return first_clean


def calibrate(
    modcods: list[int],
    frame: str,
    pilots: bool,
    esn0: list[float],
    relative: bool,
    frames: int,
    out: Path,
    max_iterations: int = 50,
    stop_after_zero: int = 2,
    command: str = "",
    decoder: Decoder = Decoder(),
    probe_frames: int = 0,
    log: Any = print,
) -> list[dict[str, Any]]:
    """Runs the calibration (resuming from OUT.state.jsonl); returns every point of the table.

    With `probe_frames` P > 0, each MODCOD's sweep first runs P frames per point up to the first
    point without error, then `frames` per point from the point before that one on: the
    waterfall's upper part, where P frames resolve the PER, costs P frames a point, and the
    frames go to its end, where PER 1e-3 is."""
    if frame not in ("normal", "short"):
        raise CalibrationError(f"--frame {frame!r} is not normal or short")
    if not 1 <= frames <= 10_000_000:
        raise CalibrationError(f"--frames {frames} is outside [1, 10000000]")
    if not 0 <= probe_frames < frames:
        raise CalibrationError(f"--probe-frames {probe_frames} is outside [0, --frames)")
    check_decoder(decoder, max_iterations)
    if not Path(GR_PYTHON).exists():
        raise CalibrationError(
            f"{GR_PYTHON} is missing (Debian's python3 with gnuradio: scripts/setup.sh)"
        )
    t13 = table13()
    if frame == "short":
        skipped = [m for m in modcods if t13[m][1] == "9/10"]
        if skipped:
            log(f"skipping MODCODs {skipped}: rate 9/10 has no short frame (EN 302 307-1 Table 5b)")
        modcods = [m for m in modcods if t13[m][1] != "9/10"]
    out.parent.mkdir(parents=True, exist_ok=True)
    state_path = out.with_name(out.name + ".state.jsonl")
    state = load_state(state_path)
    header = {
        "command": command,
        "frame": frame,
        "pilots": pilots,
        "frames": frames,
        "decoder": decoder.describe(),
        "max_iterations": max_iterations,
        "probe_frames": probe_frames,
    }
    table: dict[str, dict[str, Any]] = {
        k: r
        for k, r in state.items()
        if r["frame"] == frame
        and r["pilots"] == pilots
        and k.endswith(f"/{decoder.tag()}x{max_iterations}")
    }
    with tempfile.TemporaryDirectory(prefix="satlab-phy-") as tmp:
        run = _Run(
            frame, pilots, max_iterations, decoder, out, header, state_path, state, table,
            Path(tmp), log,
        )  # fmt: skip
        for m in modcods:
            base = t13[m][2] if relative else 0.0
            values = [round(base + e, 4) for e in esn0]
            if probe_frames:
                first_clean = run.sweep(m, values, probe_frames, 1)
                values = values[max(first_clean - 1, 0) :]
            run.sweep(m, values, frames, stop_after_zero)
    return list(table.values())


def esn0_at(points: list[dict[str, Any]], modcod: int, target: float = 1e-3) -> float | None:
    """Es/N0 where the measured PER crosses `target` (log-linear interpolation), or None."""
    pts: list[tuple[float, float]] = sorted(
        (float(r["esn0_db"]), float(r["per"])) for r in points if r["modcod"] == modcod
    )
    for (x0, p0), (x1, p1) in zip(pts, pts[1:], strict=False):
        if p0 >= target > p1:
            if p1 == 0:
                return x1  # no error at x1: the crossing is at or below it
            y0, y1, yt = math.log10(p0), math.log10(p1), math.log10(target)
            return x0 + (x1 - x0) * (y0 - yt) / (y0 - y1)
    return None


def command_line() -> str:
    return "satlab " + shlex.join(sys.argv[1:])
