# Drives edgenfd's P4Runtime server with p4runtime-shell (PyPI
# p4runtime-shell, in the venv of scripts/requirements-p4rt-shell.txt), the
# way its users do: a pipeline pushed from `edgenf p4 compile --p4info`
# text output and the P4 source (--config p4info.txt,prog.p4), then table
# entries, a multicast group and counters written and read back by name.
# Run by test/e2e/p4rt_shell_test.go: check.py ADDR L2LEARN.txt L2LEARN.p4
# L2SWITCH.txt L2SWITCH.p4. Exits non-zero with the failed check.
import os, sys, traceback
import grpc
import p4runtime_sh.shell as sh
from p4runtime_sh.p4runtime import P4RuntimeWriteException

addr, learn_info, learn_p4, switch_info, switch_p4 = sys.argv[1:6]

def check(what, cond):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)

def main():
    # 1. l2learn: exact-match entries and a multicast group
    sh.setup(device_id=1, grpc_addr=addr, election_id=(0, 1),
             config=sh.FwdPipeConfig(learn_info, learn_p4), verbose=False)
    te = sh.TableEntry("LearnIngress.dmac")(action="LearnIngress.forward")
    te.match["hdr.ethernet.dstAddr"] = "02:00:00:00:00:0b"
    te.action["port"] = "2"
    te.insert()
    got = list(sh.TableEntry("LearnIngress.dmac").read())
    check("one dmac entry read back", len(got) == 1)
    check("its key", got[0].match["hdr.ethernet.dstAddr"].exact.value == bytes([2, 0, 0, 0, 0, 0x0b]))
    check("its action", got[0].action["port"].value == b"\x02")

    te.action["port"] = "3"
    te.modify()
    got = list(sh.TableEntry("LearnIngress.dmac").read())
    check("modified to port 3", len(got) == 1 and got[0].action["port"].value == b"\x03")

    dup = sh.TableEntry("LearnIngress.dmac")(action="LearnIngress.forward")
    dup.match["hdr.ethernet.dstAddr"] = "02:00:00:00:00:0b"
    dup.action["port"] = "4"
    try:
        dup.insert()
        check("a second INSERT of the same key is refused", False)
    except P4RuntimeWriteException as e:  # a batch's per-update errors
        check("a second INSERT of the same key is refused with ALREADY_EXISTS", "ALREADY_EXISTS" in str(e))
    except grpc.RpcError as e:  # edgenf answers a batch of one with its code
        check("a second INSERT of the same key is refused with ALREADY_EXISTS", e.code() == grpc.StatusCode.ALREADY_EXISTS)

    # p4runtime-shell 0.0.6 writes replicas with the deprecated egress_port and
    # reads them back from egress_port
    mg = sh.MulticastGroupEntry(1)
    mg.add(1).add(2).add(3, instance=7)
    mg.insert()
    groups = list(sh.MulticastGroupEntry(1).read())
    check("one multicast group read back", len(groups) == 1)
    reps = [(r.egress_port, r.instance) for r in groups[0].replicas]
    check("its replicas in the form written (egress_port): %s" % reps, reps == [(1, 0), (2, 0), (3, 7)])
    mg.delete()
    check("the group deleted", list(sh.MulticastGroupEntry(1).read()) == [])

    te.delete()
    check("the entry deleted", list(sh.TableEntry("LearnIngress.dmac").read()) == [])
    sh.teardown()

    # 2. l2switch: a new pipeline (entries start empty), a table with a
    # direct counter, read through the entry and as a DirectCounterEntry
    sh.setup(device_id=1, grpc_addr=addr, election_id=(0, 1),
             config=sh.FwdPipeConfig(switch_info, switch_p4), verbose=False)
    check("the new pipeline starts empty", list(sh.TableEntry("SwIngress.mac_table").read()) == [])
    te = sh.TableEntry("SwIngress.mac_table")(action="SwIngress.forward")
    te.match["vid"] = "0"
    te.match["dst"] = "02:00:00:00:00:0c"
    te.action["port"] = "1"
    te.insert()
    dc = sh.DirectCounterEntry("SwIngress.dmac_hits")
    dc.table_entry.match["vid"] = "0"
    dc.table_entry.match["dst"] = "02:00:00:00:00:0c"
    got = list(dc.read())
    check("the entry's direct counter reads", len(got) == 1 and got[0].packet_count == 0 and got[0].byte_count == 0)
    dc.packet_count, dc.byte_count = 5, 320
    dc.modify()
    got = list(dc.read())
    check("the direct counter written", len(got) == 1 and (got[0].packet_count, got[0].byte_count) == (5, 320))
    dc.packet_count, dc.byte_count = 0, 0
    dc.modify()
    check("the direct counter reset", [(c.packet_count, c.byte_count) for c in dc.read()] == [(0, 0)])
    q = sh.TableEntry("SwIngress.mac_table")
    q.counter_data  # asks for the counter with the entries
    got = list(q.read())
    check("the entry read with its counter data", len(got) == 1 and got[0].counter_data.packet_count == 0)
    sh.teardown()
    print("p4runtime-shell: all checks passed")

# the shell's stream thread outlives a failure: leave with os._exit
try:
    main()
except BaseException:
    traceback.print_exc()
    sys.stdout.flush()
    os._exit(1)
sys.stdout.flush()
os._exit(0)
