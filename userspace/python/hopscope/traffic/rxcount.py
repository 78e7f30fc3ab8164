"""Count the packets of given UDP flows that reach an interface, in the kernel.

The generators' receivers undercount at the end of a flow: iperf3's server
stops reading at the client's TEST_END, ITGRecv closes a flow at its
sender's end message, and the datagrams still in the socket are counted
nowhere (measured: iperf3 7999 of 8000 on a lossless run; ITGRecv logged
2983 of 2988 that the receiver's UDP counted, the last five missing). A
packet socket per flow with a classic BPF filter (IPv4, UDP, source address,
destination port, IP length) counts exactly instead; it is never read, so
every match is dropped at once and PACKET_STATISTICS still counts it
(tp_packets includes tp_drops).

    ip netns exec RECEIVER python3 -m hopscope.traffic.rxcount IFACE NAME=SRC:DPORT:IPLEN ...

IPLEN 0 matches any length (a flow whose sizes vary).

prints "ready" once counting, and {"NAME": packets, ...} as JSON when its
stdin closes or it gets SIGTERM/SIGINT.
"""
import ctypes
import ipaddress
import json
import signal
import socket
import struct
import sys

ETH_P_IP = 0x0800
SOL_PACKET = 263
PACKET_STATISTICS = 6
SO_ATTACH_FILTER = 26

LD_H_ABS, LD_B_ABS, LD_W_ABS = 0x28, 0x30, 0x20
LDX_B_MSH, LD_H_IND, JEQ_K, RET_K = 0xB1, 0x48, 0x15, 0x06


def flow_filter(src, dport, ip_len):
    """Classic BPF: accept (1 byte) IPv4 UDP from src to dport of that IP
    length (any when 0)."""
    length = [(LD_H_ABS, 16, None), (JEQ_K, ip_len, True)] if ip_len else []  # IP total length
    jumps = [(LD_H_ABS, 12, None), (JEQ_K, ETH_P_IP, True),       # ethertype
             (LD_B_ABS, 23, None), (JEQ_K, 17, True),             # protocol
             (LD_W_ABS, 26, None), (JEQ_K, int(ipaddress.IPv4Address(src)), True),
             *length,
             (LDX_B_MSH, 14, None), (LD_H_IND, 16, None),         # UDP dport
             (JEQ_K, dport, True)]
    n = len(jumps)
    code = []
    for i, (op, k, test) in enumerate(jumps):
        # a failed test jumps to the last instruction (drop)
        code.append((op, 0, (n + 1) - (i + 1) if test else 0, k))
    code += [(RET_K, 0, 0, 1), (RET_K, 0, 0, 0)]
    return b"".join(struct.pack("HBBI", *c) for c in code), len(code)


def open_counter(iface, src, dport, ip_len):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)  # protocol 0: nothing yet
    prog, n = flow_filter(src, dport, ip_len)
    code = ctypes.create_string_buffer(prog, len(prog))  # the kernel copies it
    s.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER,
                 struct.pack("HL", n, ctypes.addressof(code)))  # struct sock_fprog
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)  # the kernel's minimum
    s.bind((iface, ETH_P_IP))
    return s


def packets(s):
    """Packets the filter accepted since the last call (read and reset by the kernel)."""
    got, _dropped = struct.unpack("II", s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
    return got


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    iface, counters = argv[0], {}
    for spec in argv[1:]:
        name, _, rest = spec.partition("=")
        src, dport, ip_len = rest.split(":")
        counters[name] = open_counter(iface, src, int(dport), int(ip_len))
    for s in counters.values():
        packets(s)  # nothing before "ready" counts
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    print("ready", flush=True)
    try:
        while sys.stdin.read(1):
            pass
    except KeyboardInterrupt:
        pass
    print(json.dumps({name: packets(s) for name, s in counters.items()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
