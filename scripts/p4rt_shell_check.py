# Drives edgenfd's P4Runtime server with p4runtime-shell (PyPI
# p4runtime-shell, in the venv of scripts/requirements-p4rt-shell.txt), the
# way its users do: a pipeline pushed from `edgenf p4 compile --p4info`
# text output and the P4 source (--config p4info.txt,prog.p4), then table
# entries, a multicast group and counters written and read back by name.
# Run by test/e2e/p4rt_clients_test.go: check.py ADDR L2LEARN.txt L2LEARN.p4
# L2SWITCH.txt L2SWITCH.p4 ECMP.txt ECMP.p4 (an action selector's members,
# groups and one-shot action sets). Exits non-zero with the failed check.
import os, sys, traceback
import grpc
import p4runtime_sh.shell as sh
from p4runtime_sh.p4runtime import P4RuntimeWriteException

addr, learn_info, learn_p4, switch_info, switch_p4, ecmp_info, ecmp_p4 = sys.argv[1:8]

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

    # 3. ecmp: an action selector's members and group, entries naming a
    # group and a one-shot action set, refusals with their codes
    sh.setup(device_id=1, grpc_addr=addr, election_id=(0, 1),
             config=sh.FwdPipeConfig(ecmp_info, ecmp_p4), verbose=False)
    prof = "FwdIngress.next_hops"
    def forward(a, port):
        a["srcAddr"], a["dstAddr"], a["port"] = "0xf1", "0xa%s" % port, port
        return a
    for mid, port in ((1, "1"), (2, "2")):
        m = sh.ActionProfileMember(prof)(member_id=mid, action="FwdIngress.forward")
        forward(m.action, port)
        m.insert()
    got = sorted((x.member_id, x.action["port"].value) for x in sh.ActionProfileMember(prof).read())
    check("two members read back: %s" % got, got == [(1, b"\x01"), (2, b"\x02")])
    g = sh.ActionProfileGroup(prof)(group_id=10)
    g.add(1).add(2)
    g.insert()
    got = list(sh.ActionProfileGroup(prof).read())
    check("the group read back with its members", len(got) == 1 and sorted(x.member_id for x in got[0].members) == [1, 2])
    te = sh.TableEntry("FwdIngress.routes")
    te.match["hdr.ipv4.dstAddr"] = "198.19.0.0/16"
    te.group_id = 10
    te.insert()
    one = sh.Oneshot("FwdIngress.routes")
    one.add(forward(sh.Action("FwdIngress.forward"), "3")).add(forward(sh.Action("FwdIngress.forward"), "4"))
    te2 = sh.TableEntry("FwdIngress.routes")
    te2.match["hdr.ipv4.dstAddr"] = "198.20.0.0/16"
    te2.oneshot = one
    te2.insert()
    got = list(sh.TableEntry("FwdIngress.routes").read())
    groups = [e.group_id for e in got if e._action_spec_type == sh.TableEntry._ActionSpecType.GROUP_ID]
    sets = [[a.action["port"].value for a in e.oneshot.actions] for e in got if e._action_spec_type == sh.TableEntry._ActionSpecType.ONESHOT]
    check("entries read back: group %s, one-shot %s" % (groups, sets), groups == [10] and sets == [[b"\x03", b"\x04"]])
    check("the one-shot set's members are not the client's", len(list(sh.ActionProfileMember(prof).read())) == 2)

    def refused(what, fn, code):
        try:
            fn()
            check(what + " is refused", False)
        except P4RuntimeWriteException as e:
            check(what + " is refused with " + code, code in str(e))
        except grpc.RpcError as e:
            check(what + " is refused with " + code, e.code().name == code)
    heavy = sh.ActionProfileGroup(prof)(group_id=11)
    heavy.add(1, weight=2)
    refused("a member of weight 2", heavy.insert, "UNIMPLEMENTED")
    refused("deleting a member group 10 holds", sh.ActionProfileMember(prof)(member_id=1, action="FwdIngress.forward").delete, "FAILED_PRECONDITION")
    refused("deleting the group an entry names", sh.ActionProfileGroup(prof)(group_id=10).delete, "FAILED_PRECONDITION")

    te2.delete()
    check("the one-shot entry deleted, the group's kept", len(list(sh.TableEntry("FwdIngress.routes").read())) == 1)
    m = sh.ActionProfileMember(prof)(member_id=2, action="FwdIngress.forward")
    forward(m.action, "5")
    m.modify()
    got = [x.action["port"].value for x in sh.ActionProfileMember(prof).read() if x.member_id == 2]
    check("member 2 modified to port 5", got == [b"\x05"])
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
