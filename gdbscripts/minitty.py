# SPDX-License-Identifier: GPL-2.0
#
# gdb helpers for minitty, the minimal TTY layer for serial ports
# (drivers/tty/serial/minitty_serial.c, CONFIG_TTY=n).
#
#   minitty ports           the registered ports
#   minitty state [PORT]    RX ring, TX kfifo, termios, modem lines, icount
#   minitty watch [PORT]    trace the rings while the guest runs
#   minitty unwatch         stop tracing
#   minitty enter-kernel    run the guest until the CPU is in kernel mode
#
# Loaded by `bin/minitty debug` after the kernel's vmlinux-gdb.py, whose
# `linux` package it reuses (type lookup, container_of), in the manner of
# scripts/gdb/linux/clk.py.

import re

import gdb

from linux import utils

minitty_port_type = utils.CachedType("struct minitty_port")

# MINITTY_RX_SIZE is a macro, invisible to gdb: keep in sync with
# minitty_serial.c (used only when rx_buf is a pointer, not an array).
MINITTY_RX_SIZE = 4096

# Bytes of a ring shown by `minitty state` and `minitty watch`.
SHOW_MAX = 256

# termios bits, from include/uapi/asm-generic/termbits.h and
# termbits-common.h (ARM and x86 use the generic ones): DWARF has no
# macros.
IFLAGS = [("IGNBRK", 0x001), ("BRKINT", 0x002), ("IGNPAR", 0x004),
          ("PARMRK", 0x008), ("INPCK", 0x010), ("ISTRIP", 0x020),
          ("INLCR", 0x040), ("IGNCR", 0x080), ("ICRNL", 0x100),
          ("IUCLC", 0x0200), ("IXON", 0x0400), ("IXANY", 0x800),
          ("IXOFF", 0x1000), ("IMAXBEL", 0x2000), ("IUTF8", 0x4000)]
OFLAGS = [("OPOST", 0x01), ("OLCUC", 0x02), ("ONLCR", 0x04), ("OCRNL", 0x08),
          ("ONOCR", 0x10), ("ONLRET", 0x20), ("OFILL", 0x40), ("OFDEL", 0x80)]
# fields of c_oflag: (mask, [(value, name)]); value 0 is not shown
OFIELDS = [(0x00100, [(0x00100, "NL1")]),
           (0x00600, [(0x00200, "CR1"), (0x00400, "CR2"), (0x00600, "CR3")]),
           (0x01800, [(0x00800, "TAB1"), (0x01000, "TAB2"), (0x01800, "XTABS")]),
           (0x02000, [(0x02000, "BS1")]),
           (0x04000, [(0x04000, "VT1")]),
           (0x08000, [(0x08000, "FF1")])]
CFLAGS = [("CSTOPB", 0x40), ("CREAD", 0x80), ("PARENB", 0x100),
          ("PARODD", 0x200), ("HUPCL", 0x400), ("CLOCAL", 0x800),
          ("ADDRB", 0x20000000), ("CMSPAR", 0x40000000),
          ("CRTSCTS", 0x80000000)]
CBAUD = 0x0000100f
CSIZE = 0x30
BAUDS = {0x0: "B0", 0x1: "B50", 0x2: "B75", 0x3: "B110", 0x4: "B134",
         0x5: "B150", 0x6: "B200", 0x7: "B300", 0x8: "B600", 0x9: "B1200",
         0xa: "B1800", 0xb: "B2400", 0xc: "B4800", 0xd: "B9600",
         0xe: "B19200", 0xf: "B38400", 0x1000: "BOTHER", 0x1001: "B57600",
         0x1002: "B115200", 0x1003: "B230400", 0x1004: "B460800",
         0x1005: "B500000", 0x1006: "B576000", 0x1007: "B921600",
         0x1008: "B1000000", 0x1009: "B1152000", 0x100a: "B1500000",
         0x100b: "B2000000", 0x100c: "B2500000", 0x100d: "B3000000",
         0x100e: "B3500000", 0x100f: "B4000000"}
LFLAGS = [("ISIG", 0x00001), ("ICANON", 0x00002), ("XCASE", 0x00004),
          ("ECHO", 0x00008), ("ECHOE", 0x00010), ("ECHOK", 0x00020),
          ("ECHONL", 0x00040), ("NOFLSH", 0x00080), ("TOSTOP", 0x00100),
          ("ECHOCTL", 0x00200), ("ECHOPRT", 0x00400), ("ECHOKE", 0x00800),
          ("FLUSHO", 0x01000), ("PENDIN", 0x04000), ("IEXTEN", 0x08000),
          ("EXTPROC", 0x10000)]
# c_cc indices, asm-generic/termbits.h
CC_NAMES = ["intr", "quit", "erase", "kill", "eof", "time", "min", "swtc",
            "start", "stop", "susp", "eol", "reprint", "discard", "werase",
            "lnext", "eol2"]
VTIME, VMIN = 5, 6
# TIOCM_* of include/uapi/asm-generic/termios.h
TIOCM = [("LE", 0x001), ("DTR", 0x002), ("RTS", 0x004), ("ST", 0x008),
         ("SR", 0x010), ("CTS", 0x020), ("CD", 0x040), ("RI", 0x080),
         ("DSR", 0x100), ("OUT1", 0x2000), ("OUT2", 0x4000),
         ("LOOP", 0x8000)]
ICOUNT = ["rx", "tx", "frame", "parity", "overrun", "brk", "buf_overrun",
          "cts", "dsr", "rng", "dcd"]


def flag_names(value, table):
    """The names of the bits of TABLE set in VALUE, and unknown bits in hex."""
    names = [name for name, bit in table if value & bit]
    rest = value & ~sum(bit for _, bit in table)
    return names, rest


def decode_iflag(v):
    names, rest = flag_names(v, IFLAGS)
    return names + (["0x%x" % rest] if rest else [])


def decode_oflag(v):
    names, rest = flag_names(v, OFLAGS)
    for mask, values in OFIELDS:
        names += [n for val, n in values if v & mask == val]
        rest &= ~mask
    return names + (["0x%x" % rest] if rest else [])


def decode_cflag(v):
    names = [BAUDS.get(v & CBAUD, "0x%x" % (v & CBAUD)),
             "CS%d" % (5 + ((v & CSIZE) >> 4))]
    if (v >> 16) & CBAUD:
        names.append("CIBAUD=" + BAUDS.get((v >> 16) & CBAUD, "?"))
    more, rest = flag_names(v, CFLAGS)
    rest &= ~(CBAUD | CSIZE | (CBAUD << 16))
    return names + more + (["0x%x" % rest] if rest else [])


def decode_lflag(v):
    names, rest = flag_names(v, LFLAGS)
    return names + (["0x%x" % rest] if rest else [])


def show_cc(c):
    """A control character as stty shows it."""
    if c == 0:
        return "<undef>"
    if c == 0x7f:
        return "^?"
    if c < 0x20:
        return "^" + chr(c + 0x40)
    return chr(c) if c < 0x7f else "0x%02x" % c


def printable(data):
    """BYTES as a C string literal."""
    out = []
    for b in data:
        if b == 0x0a:
            out.append("\\n")
        elif b == 0x0d:
            out.append("\\r")
        elif b == 0x09:
            out.append("\\t")
        elif b in (0x22, 0x5c):
            out.append("\\" + chr(b))
        elif 0x20 <= b < 0x7f:
            out.append(chr(b))
        else:
            out.append("\\x%02x" % b)
    return '"' + "".join(out) + '"'


def show_bytes(data, total=None):
    """'"..." hex ...' for DATA, the first bytes of TOTAL."""
    if total is None:
        total = len(data)
    if not total:
        return "(none)"
    s = "%s  %s" % (printable(data), " ".join("%02x" % b for b in data))
    if total > len(data):
        s += "  ... (%d more)" % (total - len(data))
    return s


#
# Finding the ports
#

def minitty_type():
    """struct minitty_port, or a clear error on a kernel without minitty."""
    try:
        return minitty_port_type.get_type()
    except gdb.error:
        raise gdb.GdbError(
            "minitty: this kernel has no minitty (no struct minitty_port in "
            "its debug info): it is not a CONFIG_MINITTY_SERIAL=y build, "
            "e.g. the fulltty flavour, or no vmlinux is loaded")


_drivers = None


def _forget_drivers(event):
    global _drivers
    _drivers = None


gdb.events.new_objfile.connect(_forget_drivers)


def uart_driver_names():
    """Names of the struct uart_driver variables of the kernel (cached)."""
    global _drivers
    if _drivers is None:
        out = gdb.execute("info variables -q -n -t ^struct.uart_driver$",
                          to_string=True)
        _drivers = sorted(set(re.findall(r"struct uart_driver (\w+);", out)))
    return _drivers


def uart_drivers():
    """The struct uart_driver variables of the kernel (values)."""
    for name in uart_driver_names():
        syms = []
        if hasattr(gdb, "lookup_static_symbols"):
            syms = gdb.lookup_static_symbols(name)
        glob = gdb.lookup_global_symbol(name)
        if glob is not None:
            syms.append(glob)
        for sym in syms:
            if sym.type.strip_typedefs().tag == "uart_driver":
                yield name, sym.value()


def driver_ports(drv):
    """Yield (line, mp) for each line of uart_driver DRV that has a port:
    with minitty, drv->state points to a table of drv->nr pointers to
    struct minitty_port (minitty_ports() in minitty_serial.c), NULL where
    no port was added."""
    state = drv["state"]
    if not state:
        return
    table = state.cast(minitty_type().pointer().pointer())
    for line in range(int(drv["nr"])):
        mp = table[line]
        if mp:
            yield line, mp


def for_each_port():
    """Yield (drv_name, drv, line, mp) for each port added with
    uart_add_one_port() (its mp->state.uart_port is set)."""
    for name, drv in uart_drivers():
        for line, mp in driver_ports(drv):
            if mp["state"]["uart_port"]:
                yield name, drv, line, mp


def port_name(mp):
    port = mp["state"]["uart_port"]
    if port["name"]:
        return port["name"].string()
    return "?%d" % int(port["line"])


def no_port_reason():
    """Why there is no port yet, for the error message."""
    drivers = list(uart_drivers())
    if not drivers:
        return "this kernel has no UART driver (no struct uart_driver)"
    for name, drv in drivers:
        if drv["state"]:
            return ("%s.state is set but no port was added yet "
                    "(uart_add_one_port() has not run)" % name)
    names = ", ".join(name for name, _ in drivers)
    return ("no UART driver is registered yet: %s.state is NULL "
            "(uart_register_driver() has not run)" % names)


def file_bytes(path, addr, n):
    """N bytes at address ADDR of the ELF file PATH (its section headers),
    or None when no section of the file holds ADDR."""
    import struct
    with open(path, "rb") as f:
        ident = f.read(16)
        if ident[:4] != b"\x7fELF":
            return None
        wide, order = ident[4] == 2, "<" if ident[5] == 1 else ">"
        f.seek(0x28 if wide else 0x20)
        shoff = struct.unpack(order + ("Q" if wide else "I"),
                              f.read(8 if wide else 4))[0]
        f.seek(0x3a if wide else 0x2e)
        shentsize, shnum = struct.unpack(order + "HH", f.read(4))
        fmt = order + ("IIQQQQ" if wide else "IIIIII")
        for i in range(shnum):
            f.seek(shoff + i * shentsize)
            _, typ, _, sh_addr, sh_off, sh_size = struct.unpack(
                fmt, f.read(struct.calcsize(fmt)))
            if typ != 8 and sh_addr <= addr < sh_addr + sh_size:  # !NOBITS
                f.seek(sh_off + addr - sh_addr)
                return f.read(min(n, sh_addr + sh_size - addr))
    return None


def check_same_kernel():
    """Fail when the guest does not run the vmlinux gdb loaded (rebuilt since
    the guest booted?): then every address gdb knows is wrong. Compares
    linux_banner (the version, with the build's number and date) in the
    guest's memory and in the file."""
    banner = utils.gdb_eval_or_none("&linux_banner")
    objfiles = gdb.objfiles()
    if banner is None or not objfiles or not objfiles[0].filename:
        return
    addr = int(banner.cast(utils.get_ulong_type()))
    try:
        disk = file_bytes(objfiles[0].filename, addr, 512)
    except OSError:
        return
    if not disk:
        return
    disk = disk.split(b"\0", 1)[0]
    live = read_bytes(addr, len(disk))
    if live != disk:
        def build(banner):
            m = re.search(rb"#\S+ [^\n]*", banner)
            return (m.group(0) if m else banner).decode("ascii", "replace")
        raise gdb.GdbError(
            "minitty: the guest does not run the vmlinux gdb loaded (%s, "
            "rebuilt since the guest booted?): the guest's kernel is build "
            "%r, the file's %r" % (objfiles[0].filename, build(live),
                                   build(disk)))


def ports():
    """The list of (drv_name, drv, line, mp), or a GdbError when empty."""
    minitty_type()
    check_same_kernel()
    found = list(for_each_port())
    if not found:
        raise gdb.GdbError("minitty: no port registered: " + no_port_reason())
    return found


def find_port(arg):
    """The struct minitty_port * PORT names: an index of `minitty ports`, a
    device name (ttyAMA0), or empty for the console (else the first)."""
    found = ports()
    arg = arg.strip()
    if not arg:
        for _, _, _, mp in found:
            if mp["state"]["port"]["console"]:
                return mp
        return found[0][3]
    args = gdb.string_to_argv(arg)
    if len(args) != 1:
        raise gdb.GdbError("minitty: one PORT expected, got %r" % arg)
    arg = args[0]
    if re.fullmatch(r"\d+", arg):
        i = int(arg)
        if i >= len(found):
            raise gdb.GdbError(
                "minitty: no port %d: the ports are 0..%d (minitty ports)"
                % (i, len(found) - 1))
        return found[i][3]
    for _, _, _, mp in found:
        if port_name(mp) == arg or "/dev/" + port_name(mp) == arg:
            return mp
    raise gdb.GdbError("minitty: no port %r: give an index or a device name "
                       "of `minitty ports` (%s)" %
                       (arg, ", ".join(port_name(p[3]) for p in found)))


#
# The guest's CPU
#

class Cpu:
    """What the helpers need to know of a guest's CPU: ARCH, gdb's name of
    its architecture (configs/arches, gdbarch), or a prefix of it;
    USER_MODE, a gdb expression that is true while the CPU runs user code,
    where QEMU's gdbstub may not read the kernel's memory; ENTRIES, the
    functions where the CPU enters the kernel from user mode (`minitty
    enter-kernel` breaks there)."""

    def __init__(self, arch, user_mode, entries):
        self.arch = arch
        self.user_mode = user_mode
        self.entries = entries


CPUS = [
    # ARM: CPSR's mode field is USR (0x10); QEMU's gdbstub reads with the
    # permissions of the CPU's mode, and user mode has none on the kernel's
    # memory. The exception vectors of arch/arm/kernel/entry-*.S.
    Cpu("arm", "($cpsr & 0x1f) == 0x10",
        ["vector_swi", "__irq_usr", "__dabt_usr", "__pabt_usr", "__und_usr",
         "__fiq_usr"]),
    # x86_64: CS's privilege level is 3; QEMU's gdbstub reads through the
    # current page tables, and with page table isolation the user's map
    # almost none of the kernel. The C functions behind the system calls
    # and behind the interrupts and exceptions run on the kernel's (the
    # assembly entries of arch/x86/entry/entry_64.S switch to them first).
    Cpu("i386:x86-64", "($cs & 3) == 3", ["do_syscall_64", "irqentry_enter"]),
    # arm64: PSTATE's exception level (bits 3:2) is EL0, for 64-bit and
    # for compat (AArch32) user code alike; QEMU's gdbstub reads with the
    # permissions of EL0 then. The C handlers behind the EL0 vectors of
    # arch/arm64/kernel/entry.S (entry-common.c; el0t_32_* with COMPAT).
    Cpu("aarch64", "($cpsr & 0xc) == 0",
        ["el0t_64_sync_handler", "el0t_64_irq_handler", "el0t_32_sync_handler",
         "el0t_32_irq_handler"]),
]


def gdb_arch():
    """gdb's name of the current architecture (arm, i386:x86-64, aarch64)."""
    try:
        return gdb.selected_inferior().architecture().name()
    except (gdb.error, AttributeError):
        return "?"


def cpu():
    """The Cpu of gdb's current architecture, or None when these helpers do
    not know it."""
    name = gdb_arch()
    for c in CPUS:
        if name.startswith(c.arch):
            return c
    return None


def cpu_in_user_mode():
    """Whether the CPU runs user code (False when there is no CPU: no
    target, or an architecture CPUS does not list)."""
    c = cpu()
    if c is None:
        return False
    try:
        return bool(int(gdb.parse_and_eval(c.user_mode)))
    except gdb.error:
        return False


def memory_error_reason():
    """Why the guest's kernel memory cannot be read, as far as we can tell."""
    try:
        pc = int(gdb.parse_and_eval("$pc"))
        text = int(gdb.parse_and_eval("(unsigned long)&_text"))
    except gdb.error:
        return "is gdb connected to the guest (target remote)?"
    if cpu_in_user_mode():
        return ("the CPU stopped in user mode (pc 0x%x), where QEMU's gdbstub "
                "cannot read kernel memory: `minitty enter-kernel` lets the "
                "guest run until it enters the kernel, then try again" % pc)
    if pc < text:
        return ("the CPU is at 0x%x, below the kernel's virtual addresses: the "
                "kernel has not turned the MMU on yet (boot --gdb-wait stops "
                "at the first instruction); `tbreak start_kernel` and "
                "`continue` first" % pc)
    return "is gdb connected to the guest (target remote)?"


# The exception behind the last error message, for debugging these helpers:
#   python import traceback; traceback.print_exception(last_error)
last_error = None


def guarded(fn):
    """Run FN, turning gdb errors (unreadable memory above all) into one
    clear line instead of a Python traceback. When gdb stopped the CPU in
    user mode, enter the kernel first (saying so in one line)."""
    def wrapper(*args):
        global last_error
        try:
            if cpu_in_user_mode():
                gdb.write("minitty: the CPU was in user mode (pc 0x%x), where QEMU's "
                          "gdbstub cannot read kernel memory: entering the kernel "
                          "first (minitty enter-kernel)\n" % int(gdb.parse_and_eval("$pc")))
                enter_kernel()
            return fn(*args)
        except gdb.GdbError:
            raise
        except gdb.MemoryError as e:
            last_error = e
            msg = ("cannot read the guest's memory (%s): %s" %
                   (e, memory_error_reason()))
        except gdb.error as e:
            last_error = e
            msg = str(e)
        raise gdb.GdbError("minitty: " + msg)
    return wrapper


#
# Reading the rings
#

def read_bytes(addr, n):
    if n <= 0:
        return b""
    return bytes(gdb.selected_inferior().read_memory(int(addr), n))


def ring_bytes(buf, size, start, count):
    """COUNT bytes of a SIZE byte ring at BUF from free-running index START,
    wrapping around the end."""
    count = min(count, SHOW_MAX)
    first = start & (size - 1)
    n1 = min(count, size - first)
    return read_bytes(int(buf) + first, n1) + read_bytes(int(buf), count - n1)


def field(value, name):
    """VALUE[NAME], or None when this kernel's struct has no such field
    (VALUE: a struct or a pointer to one)."""
    t = value.type.strip_typedefs()
    if t.code == gdb.TYPE_CODE_PTR:
        t = t.target().strip_typedefs()
    if any(f.name == name for f in t.fields()):
        return value[name]
    return None


def console_port():
    """The port /dev/console opens (minitty_console), or None."""
    v = utils.gdb_eval_or_none("minitty_console")
    return int(v) if v is not None and v.type.code == gdb.TYPE_CODE_PTR else None


def index_mask(value):
    """All the bits of VALUE's type: the free-running indices of the rings
    (unsigned int) wrap around at it, and so do their differences."""
    return (1 << 8 * value.type.strip_typedefs().sizeof) - 1


def rx_mask(mp):
    return index_mask(mp["rx_head"])


def rx_size(mp):
    t = mp["rx_buf"].type.strip_typedefs()
    if t.code == gdb.TYPE_CODE_ARRAY:
        return t.sizeof
    return MINITTY_RX_SIZE


def rx_buf_addr(mp):
    buf = mp["rx_buf"]
    if buf.type.strip_typedefs().code == gdb.TYPE_CODE_ARRAY:
        return int(buf.address)
    return int(buf)


def rx_indices(mp):
    return (int(mp["rx_head"]), int(mp["rx_vetted"]), int(mp["rx_tail"]))


def rx_bytes(mp, start, end):
    """The bytes of the RX ring in [START, END) (free-running indices)."""
    buf = rx_buf_addr(mp)
    n = (end - start) & rx_mask(mp)
    if not buf or not n or n > rx_size(mp):
        return b"", n
    return ring_bytes(buf, rx_size(mp), start, n), n


def xmit_fifo(mp):
    """The struct __kfifo of the port's TX kfifo."""
    return mp["state"]["port"]["xmit_fifo"]["kfifo"]


def tx_indices(mp):
    """(in, out, used, size) of the TX kfifo."""
    fifo = xmit_fifo(mp)
    fin, fout = int(fifo["in"]), int(fifo["out"])
    size = int(fifo["mask"]) + 1 if fifo["data"] else 0
    return fin, fout, (fin - fout) & index_mask(fifo["in"]), size


def tx_bytes(mp, start, end):
    fifo = xmit_fifo(mp)
    n = (end - start) & index_mask(fifo["in"])
    size = int(fifo["mask"]) + 1
    if not fifo["data"] or not n or n > size:
        return b"", n
    return ring_bytes(fifo["data"], size, start, n), n


#
# minitty ports / state
#

class Minitty(gdb.Command):
    """Inspect minitty, the minimal TTY layer for serial ports (CONFIG_TTY=n).

minitty ports          the registered ports
minitty state [PORT]   the RX ring, TX kfifo, termios, modem lines, icount
minitty watch [PORT]   trace the rings while the guest runs (then: continue)
minitty unwatch        stop tracing
minitty enter-kernel   run the guest until the CPU is in kernel mode

PORT is an index or device name from `minitty ports`; without it, the
console's port (else the first). The commands read the guest's kernel
memory, which QEMU's gdbstub may not reach while the CPU runs user code
(ARM; x86_64 with page table isolation): they enter the kernel first."""

    def __init__(self):
        super(Minitty, self).__init__("minitty", gdb.COMMAND_DATA,
                                      gdb.COMPLETE_NONE, True)


Minitty()


class MinittyPorts(gdb.Command):
    """List the serial ports of minitty.

minitty ports

One line per port added by uart_add_one_port(): its index (the PORT of the
other minitty commands), device name, UART driver (uart_driver name, then
the device driver), open count (tty_port.count), whether it is a console
(yes*: the one /dev/console opens), and the address of its struct
minitty_port, for `p *(struct minitty_port *)ADDR`."""

    def __init__(self):
        super(MinittyPorts, self).__init__("minitty ports", gdb.COMMAND_DATA)

    @guarded
    def invoke(self, arg, from_tty):
        if arg.strip():
            raise gdb.GdbError("minitty ports: no arguments expected")
        found = ports()
        cons = console_port()
        gdb.write("%-5s %-10s %-22s %5s %-7s %s\n" %
                  ("index", "device", "driver", "open", "console",
                   "struct minitty_port"))
        for i, (name, drv, line, mp) in enumerate(found):
            port = mp["state"]["uart_port"]
            driver = drv["driver_name"].string() if drv["driver_name"] else name
            dev = port["dev"]
            if dev and dev["driver"]:
                driver += " (%s)" % dev["driver"]["name"].string()
            gdb.write("%-5d %-10s %-22s %5d %-7s 0x%x\n" %
                      (i, port_name(mp), driver,
                       int(mp["state"]["port"]["count"]),
                       ("yes*" if cons == int(mp) else "yes")
                       if mp["state"]["port"]["console"] else "no",
                       int(mp)))
        if cons is not None and any(int(p[3]) == cons for p in found):
            gdb.write("(* the port /dev/console opens: minitty_console)\n")


MinittyPorts()


def show_state(mp):
    port = mp["state"]["uart_port"]
    tport = mp["state"]["port"]
    out = []
    out.append("%s: struct minitty_port 0x%x, uart_port 0x%x, open %d%s" %
               (port_name(mp), int(mp), int(port), int(tport["count"]),
                ", console" if tport["console"] else ""))

    head, vetted, tail = rx_indices(mp)
    size = rx_size(mp)
    buf = rx_buf_addr(mp)
    out.append("RX ring: %s" % ("rx_buf 0x%x, %d bytes" % (buf, size) if buf
                                 else "not allocated (the port is not open)"))
    out.append("  head %d  vetted %d  tail %d   (slots %d %d %d)" %
               (head, vetted, tail, head & (size - 1), vetted & (size - 1),
                tail & (size - 1)))
    mask = rx_mask(mp)
    pending = (head - tail) & mask
    unvetted = (head - vetted) & mask
    queued = int(mp["rx_queued"])
    out.append("  pending %d bytes (%d vetted, %d not vetted)  lines %d  "
               "queued %d" %
               (pending, (vetted - tail) & mask, unvetted, int(mp["rx_lines"]),
                queued))
    if queued:
        out.append("  queued (the ring was full): " + show_bytes(
            bytes(int(mp["rx_queue"][i]) & 0xff for i in range(queued))))
    pushed = field(mp, "rx_pushed")
    if pushed:
        push = int(mp["rx_push"])
        out.append("  pushed line without terminator: [tail, %d), %d bytes" %
                   (push, (push - tail) & mask))
    if pending > size or (vetted - tail) & mask > pending:
        out.append("  INCONSISTENT: the ring invariant tail <= vetted <= head "
                   "<= tail + %d does not hold" % size)
    else:
        data, n = rx_bytes(mp, tail, vetted)
        out.append("  vetted:     " + show_bytes(data, n))
        data, n = rx_bytes(mp, vetted, head)
        out.append("  not vetted: " + show_bytes(data, n))
        # the first of them may have been echoed by the RX path already
        echoed = field(mp, "rx_echoed")
        if echoed is not None:
            ahead = (int(mp["rx_echo_to"]) - vetted) & mask if echoed else 0
            out.append("  echoed as they came: %d of them  TX claims %d" %
                       (min(ahead, unvetted), int(mp["tx_claims"])))

    fin, fout, used, tsize = tx_indices(mp)
    if tsize:
        out.append("TX kfifo: data 0x%x, %d bytes" %
                   (int(xmit_fifo(mp)["data"]), tsize))
        out.append("  in %d  out %d  used %d  free %d" %
                   (fin, fout, used, tsize - used))
        data, n = tx_bytes(mp, fout, fin)
        out.append("  pending: " + show_bytes(data, n))
        echo = mp["echo_fifo"]["kfifo"]
        ein, eout = int(echo["in"]), int(echo["out"])
        n = (ein - eout) & index_mask(echo["in"])
        esize = int(echo["mask"]) + 1
        out.append("  held echoes (the fifo was full): " + show_bytes(
            ring_bytes(echo["data"], esize, eout, n) if 0 < n <= esize else b"",
            n))
    else:
        out.append("TX kfifo: not allocated (the port is not open)")

    out.append("column %d  canon_column %d  stopped %s  hw_stopped %s" %
               (int(mp["column"]), int(mp["canon_column"]),
                "yes" if mp["stopped"] else "no",
                "yes" if port["hw_stopped"] else "no"))

    t = mp["termios"]
    iflag, oflag = int(t["c_iflag"]), int(t["c_oflag"])
    cflag, lflag = int(t["c_cflag"]), int(t["c_lflag"])
    out.append("termios:")
    out.append("  c_iflag 0x%08x %s" % (iflag, " ".join(decode_iflag(iflag))))
    out.append("  c_oflag 0x%08x %s" % (oflag, " ".join(decode_oflag(oflag))))
    out.append("  c_cflag 0x%08x %s" % (cflag, " ".join(decode_cflag(cflag))))
    out.append("  c_lflag 0x%08x %s" % (lflag, " ".join(decode_lflag(lflag))))
    cc = [int(t["c_cc"][i]) for i in range(len(CC_NAMES))]
    out.append("  c_cc " + " ".join(
        "%s %s" % (n, cc[i] if i in (VTIME, VMIN) else show_cc(cc[i]))
        for i, n in enumerate(CC_NAMES)))
    out.append("  speed %d in, %d out" % (int(t["c_ispeed"]),
                                          int(t["c_ospeed"])))

    mctrl = int(port["mctrl"])
    names, _ = flag_names(mctrl, TIOCM)
    out.append("modem: mctrl 0x%x %s (the lines the kernel sets; the inputs "
               "are read from the UART by TIOCMGET)" %
               (mctrl, " ".join(names) or "(none)"))
    ic = port["icount"]
    out.append("icount: " + " ".join("%s %d" % (f, int(ic[f]))
                                     for f in ICOUNT))
    return "\n".join(out) + "\n"


class MinittyState(gdb.Command):
    """Show the state of a minitty port.

minitty state [PORT]

The RX ring: head, vetted, tail (free-running indices, and their slots),
the bytes pending (vetted ones, that read() may return, and not yet
vetted ones, that input processing has not seen, and how many of
those the RX path echoed as they came, with the claims process context
holds on the TX kfifo), the line count and the bytes queued behind a
full ring; the TX kfifo: in, out,
used, free, the bytes the UART has yet to send and the echoes held while
it was full; the output column and the column where
the input line's echo started; the termios flags by name; the modem
control lines (uart_port.mctrl) and the icount counters.

PORT is an index or device name from `minitty ports`; without it, the
console's port (else the first)."""

    def __init__(self):
        super(MinittyState, self).__init__("minitty state", gdb.COMMAND_DATA)

    @guarded
    def invoke(self, arg, from_tty):
        gdb.write(show_state(find_port(arg)))


MinittyState()


#
# minitty watch / unwatch
#

class Watch:
    """What `minitty watch` traces: one port, its breakpoints."""

    def __init__(self, mp):
        self.mp = mp
        self.name = port_name(mp)
        self.breakpoints = []
        self.last_out = None
        self.last_stop = None
        # the other ports, whose calls are not shown
        self.others = set(int(p[3]) for p in ports()) - {int(mp)}

    def rx(self):
        head, vetted, tail = rx_indices(self.mp)
        return "head %d vetted %d tail %d" % (head, vetted, tail)

    def tx(self):
        fin, fout, used, size = tx_indices(self.mp)
        return "in %d out %d used %d free %d" % (fin, fout, used, size - used)

    def emit(self, event, text):
        gdb.write("minitty %-8s %s %s\n" % (event, self.name, text))
        gdb.flush()


watching = None


def pc_sp():
    """(pc, sp) of the selected frame (None when they cannot be read)."""
    try:
        frame = gdb.selected_frame()
        return int(frame.pc()), int(frame.read_register("sp"))
    except (gdb.error, ValueError):
        return None


def frame_arg(names):
    """The first of NAMES readable in the selected frame, or None (an
    argument of an inlined copy may be optimized out)."""
    try:
        frame = gdb.selected_frame()
    except gdb.error:
        return None
    for name in names:
        try:
            v = frame.read_var(name)
        except (gdb.error, ValueError):
            continue
        if not v.is_optimized_out:
            return v
    return None


class WatchBreakpoint(gdb.Breakpoint):
    """A breakpoint of `minitty watch`: prints one line, never stops."""

    event = None

    def __init__(self, watch, spec):
        super(WatchBreakpoint, self).__init__(spec, gdb.BP_BREAKPOINT,
                                              internal=True)
        self.silent = True
        self.watch = watch

    def port_mp(self):
        """The struct minitty_port * of this call, when readable."""
        mp = frame_arg(["mp"])
        if mp is not None:
            return mp
        port = frame_arg(["port", "uport"])
        if port is not None and port.type.strip_typedefs().code == gdb.TYPE_CODE_PTR:
            return utils.container_of(port["state"], minitty_type().pointer(),
                                      "state")
        return None

    def stop(self):
        w = self.watch
        try:
            mp = self.port_mp()
            # another port's call; an argument that is unreadable, or not a
            # port (a wrong location of an inlined copy's), counts as ours
            if mp is not None and int(mp) != int(w.mp) and \
                    int(mp) in w.others:
                return False
            text = self.line()
        except Exception as e:  # noqa: BLE001 - never stop the guest
            text = "(cannot show: %s)" % e
        # gdb may report one breakpoint stop twice in a row (seen on x86_64
        # under QEMU: the same call at the same pc and stack, the guest's
        # state unchanged, the flags register not always alike): the
        # second is no new event.
        stop = (self.number, pc_sp(), text)
        if stop[1] is not None and stop == w.last_stop:
            return False
        w.last_stop = stop
        w.emit(self.event, text)
        return False


class RxPut(WatchBreakpoint):
    """Bytes enter the RX ring at head, in IRQ context."""
    event = "rx-put"

    def line(self):
        c = frame_arg(["c", "ch"])
        byte = show_bytes(bytes([int(c) & 0xff])) if c is not None else "?"
        return "%s | byte %s" % (self.watch.rx(), byte)


class RxVet(WatchBreakpoint):
    """Input processing and echo vet [vetted, head)."""
    event = "vet"

    def line(self):
        head, vetted, tail = rx_indices(self.watch.mp)
        data, n = rx_bytes(self.watch.mp, vetted, head)
        return "%s | %d to vet %s" % (self.watch.rx(), n, show_bytes(data, n))


class RxRead(WatchBreakpoint):
    """read() copies n bytes out from tail."""
    event = "read"

    def line(self):
        head, vetted, tail = rx_indices(self.watch.mp)
        n = frame_arg(["n"])
        if n is None:
            return "%s | ? bytes" % self.watch.rx()
        data, n = rx_bytes(self.watch.mp, tail, tail + int(n))
        return "%s | %d to copy %s" % (self.watch.rx(), n, show_bytes(data, n))


class TxFill(WatchBreakpoint):
    """The TX kfifo was filled (write() or echo); the UART is started."""
    event = "tx-fill"

    def line(self):
        fin, fout, used, size = tx_indices(self.watch.mp)
        data, n = tx_bytes(self.watch.mp, fout, fin)
        return "tx %s | pending %s" % (self.watch.tx(), show_bytes(data, n))


class TxDrain(WatchBreakpoint):
    """The driver drained the TX kfifo below WAKEUP_CHARS."""
    event = "tx-drain"

    def line(self):
        w = self.watch
        fin, fout, used, size = tx_indices(w.mp)
        text = "tx %s" % w.tx()
        if w.last_out is not None and \
                ((fout - w.last_out) & index_mask(xmit_fifo(w.mp)["in"])) <= size:
            data, n = tx_bytes(w.mp, w.last_out, fout)
            text += " | sent %s" % show_bytes(data, n)
        w.last_out = fout
        return text


# Where each event is, in minitty_serial.c: the first function of each list
# that has an out-of-line copy, else the first gdb knows. A breakpoint on an
# inlined function may miss some of its copies: GCC splits an inlined copy
# into ranges, gdb breaks at one entry (minitty_write's minitty_start_tx).
WATCH_POINTS = [(RxPut, ["minitty_rx_put"]), (RxVet, ["minitty_receive"]),
                (RxRead, ["minitty_copy_out"]),
                (TxFill, ["minitty_start_tx", "__minitty_start_tx"]),
                (TxDrain, ["uart_write_wakeup"])]


def out_of_line(name):
    """Whether function NAME has an out-of-line copy."""
    sym = gdb.lookup_static_symbol(name) or gdb.lookup_global_symbol(name)
    return sym is not None and sym.addr_class == gdb.SYMBOL_LOC_BLOCK


def known(name):
    try:
        gdb.decode_line(name)
        return True
    except gdb.error:
        return False


def watch_location(names):
    """(function, inlined?) where to break for an event, or None."""
    for name in names:
        if out_of_line(name):
            return name, False
    for name in names:
        if known(name):
            return name, True
    return None


def unwatch():
    global watching
    if watching is None:
        return False
    for bp in watching.breakpoints:
        if bp.is_valid():
            bp.delete()
    watching = None
    return True


class MinittyWatch(gdb.Command):
    """Trace a minitty port's rings while the guest runs.

minitty watch [PORT]     then: continue (Ctrl-C stops the guest again)

Sets breakpoints that print one line and let the guest go on, where
  rx-put    a byte enters the RX ring at head (minitty_rx_put, IRQ context)
  vet       input processing and echo vet [vetted, head) (minitty_receive)
  read      read() copies bytes out from tail (minitty_copy_out)
  tx-fill   write() or echo filled the TX kfifo (minitty_start_tx, or
            __minitty_start_tx when the former is inlined)
  tx-drain  the driver drained the TX kfifo (uart_write_wakeup)
Each line shows the ring indices as the event begins and the bytes
involved; a line equal to the one before, from the same place and stack,
is not shown again (gdb may report one stop twice). `minitty unwatch`
removes the breakpoints. A new watch replaces the previous one.

PORT is an index or device name from `minitty ports`; without it, the
console's port (else the first)."""

    def __init__(self):
        super(MinittyWatch, self).__init__("minitty watch", gdb.COMMAND_RUNNING)

    @guarded
    def invoke(self, arg, from_tty):
        global watching
        mp = find_port(arg)
        unwatch()
        w = Watch(mp)
        w.last_out = tx_indices(mp)[1]
        missing, inlined = [], []
        try:
            for cls, names in WATCH_POINTS:
                where = watch_location(names)
                if where is None:
                    missing.append("/".join(names))
                    continue
                if where[1]:
                    inlined.append(where[0])
                w.breakpoints.append(cls(w, where[0]))
        except gdb.error:
            for bp in w.breakpoints:
                bp.delete()
            raise
        watching = w
        gdb.write("minitty watch %s: %s; `continue` to let the guest run\n" %
                  (w.name, ", ".join("%s (%s)" % (b.event, b.location)
                                     for b in w.breakpoints)))
        if inlined:
            gdb.write("minitty watch: inlined, some calls may not show: %s\n"
                      % ", ".join(inlined))
        if missing:
            gdb.write("minitty watch: not found in this kernel, not traced: "
                      "%s\n" % ", ".join(missing))
        gdb.flush()


MinittyWatch()


class MinittyUnwatch(gdb.Command):
    """Stop `minitty watch`: remove its breakpoints.

minitty unwatch"""

    def __init__(self):
        super(MinittyUnwatch, self).__init__("minitty unwatch",
                                             gdb.COMMAND_RUNNING)

    def invoke(self, arg, from_tty):
        name = watching.name if watching is not None else None
        if unwatch():
            gdb.write("minitty unwatch: %s no longer traced\n" % name)
        else:
            gdb.write("minitty unwatch: nothing is watched\n")


MinittyUnwatch()


def enter_kernel():
    """Continue to the first entry into the kernel from user mode."""
    c = cpu()
    if c is None:
        raise gdb.GdbError("minitty enter-kernel: these helpers do not know "
                           "where the kernel is entered on architecture %s "
                           "(gdbscripts/minitty.py, CPUS)" % gdb_arch())
    bps = []
    try:
        for spec in c.entries:
            try:
                gdb.decode_line(spec)
            except gdb.error:
                continue
            bps.append(gdb.Breakpoint(spec, internal=True, temporary=True))
        if not bps:
            raise gdb.GdbError("minitty enter-kernel: no kernel entry "
                               "point found (%s)" % ", ".join(c.entries))
        gdb.execute("continue", to_string=True)
    finally:
        for bp in bps:
            if bp.is_valid():
                bp.delete()


class MinittyEnterKernel(gdb.Command):
    """Let the guest run until the CPU is in kernel mode.

minitty enter-kernel

QEMU's gdbstub may not read kernel memory while the CPU runs user code
(on ARM it cannot; on x86_64 it cannot with page table isolation): when
gdb stopped the guest in user space, the other minitty commands might not
read the ports, and enter the kernel first. This sets temporary
breakpoints where the CPU enters the kernel from user mode (system call,
interrupt, exception) and continues to the first one. Does nothing in
kernel mode."""

    def __init__(self):
        super(MinittyEnterKernel, self).__init__("minitty enter-kernel",
                                                 gdb.COMMAND_RUNNING)

    def invoke(self, arg, from_tty):
        if not cpu_in_user_mode():
            gdb.write("minitty enter-kernel: the CPU is in kernel mode\n")
            return
        enter_kernel()
        gdb.write("minitty enter-kernel: stopped at %s\n" %
                  gdb.execute("x/i $pc", to_string=True).strip())


MinittyEnterKernel()
