"""The files a capture reads and writes, for capture_attention.py.

The inputs (--text, --token_ids, the model directory's files), the checks
on --output (the rules of tools/files/files.h: a regular file or a new
path, never an input), and the .safetensors writer that streams each
tensor's bytes to their offsets as they are computed.
"""

import argparse
import json
import math
import os
import stat
import struct
import tempfile


class UsageError(Exception):
    """A bad argument, or a run refused before it started: exit status 2."""


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """--help with each flag's default, unless its help already says it or
    there is none to say (None, or False for a switch)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "(default" in text or action.default in (None, False):
            return text
        return super()._get_help_string(action)


def file_kind(mode):
    """What a file that is not a regular one is, for a refusal."""
    for test, kind in ((stat.S_ISLNK, "a symbolic link"),
                       (stat.S_ISDIR, "a directory"),
                       (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


def capture_inputs(args):
    """The files the capture reads, as (name, path): --text or --token_ids,
    and every file in the --model directory (its config, weights and
    tokenizer)."""
    inputs = []
    for flag, path in (("--text", args.text), ("--token_ids", args.token_ids)):
        if path is not None:
            inputs.append((f"{flag}={path}", path))
    try:
        with os.scandir(args.model) as entries:
            for entry in entries:
                inputs.append((f"{entry.path} (in --model)", entry.path))
    except OSError:
        pass  # no model directory: refused on its own
    return inputs


def check_output(path, inputs):
    """Refuses --output when writing it would replace something that is not
    a regular file, or destroy an input.

    `path` may not exist yet; when it exists it must be a regular file
    (os.lstat: a symlink is refused, not followed; a FIFO, a device such as
    /dev/null or a directory is never replaced) and none of `inputs`
    ((name, path) pairs), compared by device and inode, so that another name
    for the same file is caught too. The same rules as tools/files/files.h.
    """
    try:
        out = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as e:
        raise UsageError(f"--output={path}: cannot inspect it: "
                         f"{e.strerror}") from None
    if not stat.S_ISREG(out.st_mode):
        raise UsageError(f"--output={path} exists and is "
                         f"{file_kind(out.st_mode)}: refusing to replace it "
                         f"(give the path of a regular file, or of one that "
                         f"does not exist yet)")
    for name, input_path in inputs:
        try:
            other = os.stat(input_path)
        except OSError:
            continue
        if (other.st_dev, other.st_ino) == (out.st_dev, out.st_ino):
            raise UsageError(f"--output={path} is the input {name}: writing "
                             f"it would destroy the input")


def read_text(path):
    if not os.path.isfile(path):
        raise UsageError(f"--text: '{path}' is not a file")
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"--text: '{path}' is not UTF-8: {e}") from None
    if not text:
        raise UsageError(f"--text: '{path}' is empty: there is nothing to run")
    return text


def read_token_ids(path, vocab_size):
    if not os.path.isfile(path):
        raise UsageError(f"--token_ids: '{path}' is not a file")
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("ascii").strip()
    except UnicodeDecodeError:
        raise UsageError(f"--token_ids: '{path}' is not a list of integers "
                         f"(it is not ASCII text)") from None
    if text.startswith("["):
        try:
            values = json.loads(text)
        except json.JSONDecodeError as e:
            raise UsageError(f"--token_ids: '{path}': not a JSON list: "
                             f"{e}") from None
    else:
        values = text.replace(",", " ").split()
    ids = []
    for i, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise UsageError(f"--token_ids: '{path}': entry {i} is not an "
                             f"integer: {value!r}")
        try:
            token = int(value)
        except ValueError:
            raise UsageError(f"--token_ids: '{path}': entry {i} is not an "
                             f"integer: {value!r}") from None
        if not 0 <= token < vocab_size:
            raise UsageError(f"--token_ids: '{path}': entry {i} is {token}, "
                             f"outside the vocabulary 0..{vocab_size - 1}")
        ids.append(token)
    if not ids:
        raise UsageError(f"--token_ids: '{path}' holds no token id")
    return ids


def encode_header(tensors, metadata):
    """The safetensors header of `tensors` (name, dtype, shape, itemsize),
    padded to a multiple of 8 bytes; each tensor's offset in the data; the
    data's size."""
    header, offsets, offset = {}, {}, 0
    for name, dtype, shape, itemsize in tensors:
        size = math.prod(shape) * itemsize
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [offset, offset + size]}
        offsets[name] = offset
        offset += size
    header["__metadata__"] = metadata
    encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)
    return encoded, offsets, offset


# The safetensors library refuses a header longer than this
# (safetensors/src/tensor.rs, MAX_HEADER_SIZE: safetensors 0.8.0 opened a
# 100,000,000-byte header and refused one of 100,000,008).
MAX_HEADER_BYTES = 100_000_000


class SafetensorsWriter:
    """A .safetensors file written as it is computed.

    The header (every tensor's dtype, shape and offsets, and the metadata) is
    written first; each tensor's bytes are then written at their offsets as
    they are produced. The file is a temporary one beside `path` until
    commit() renames it.
    """

    def __init__(self, path, tensors, metadata, inputs):
        encoded, self.offsets, offset = encode_header(tensors, metadata)
        self.base = 8 + len(encoded)
        self.size = self.base + offset
        self.path = path
        self.inputs = inputs
        fd, self.temp = tempfile.mkstemp(
            dir=os.path.dirname(os.path.abspath(path)), suffix=".tmp")
        self.fd = fd
        os.write(fd, struct.pack("<Q", len(encoded)) + encoded)
        os.ftruncate(fd, self.size)

    def write(self, name, byte_offset, array):
        """Writes a contiguous numpy array at `byte_offset` in tensor `name`."""
        view = memoryview(array).cast("B")
        position = self.base + self.offsets[name] + byte_offset
        while view:
            written = os.pwrite(self.fd, view, position)
            view, position = view[written:], position + written

    def commit(self):
        os.fsync(self.fd)
        os.close(self.fd)
        self.fd = None
        # Checked again just before the rename: a path that became a FIFO
        # or a symlink meanwhile is still not replaced.
        check_output(self.path, self.inputs)
        os.replace(self.temp, self.path)

    def abort(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if os.path.exists(self.temp):
            os.unlink(self.temp)
