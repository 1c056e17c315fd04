"""Shared test vectors for edgenf's P4Runtime codec (internal/p4rt/messages.go),
made by the encoder of PyPI's p4runtime package (pinned in
scripts/requirements-test.txt), the reference for the wire format.

  p4runtime_vectors.py make    prints [{"name", "type", "hex"}, ...]: one
                               message of each kind edgenf reads or writes,
                               every field edgenf knows set
  p4runtime_vectors.py check   reads [{"name", "type", "hex", "got"}, ...]
                               (got: edgenf's encoding of what it decoded)
                               and prints the names whose two encodings are
                               not the same message, with both as text

TestMessagesMatchP4RuntimePackage runs it.
"""
import json
import sys

from google.protobuf import any_pb2
from google.rpc import status_pb2
from p4.v1 import p4data_pb2, p4runtime_pb2 as p


def u128(high, low):
    return p.Uint128(high=high, low=low)


def table_entry():
    te = p.TableEntry(table_id=0x02000001, priority=10, idle_timeout_ns=5_000_000_000,
                      metadata=b"\x01\x02", is_default_action=False)
    fm = te.match.add(field_id=1)
    fm.exact.value = b"\x0a\x00\x00\x01"
    fm = te.match.add(field_id=2)
    fm.ternary.value, fm.ternary.mask = b"\x08\x00", b"\xff\xff"
    fm = te.match.add(field_id=3)
    fm.lpm.value, fm.lpm.prefix_len = b"\xc6\x12\x00\x00", 15
    fm = te.match.add(field_id=4)
    fm.range.low, fm.range.high = b"\x00\x50", b"\x01\xbb"
    fm = te.match.add(field_id=5)
    fm.optional.value = b"\x06"
    te.action.action.action_id = 0x01000002
    te.action.action.params.add(param_id=1, value=b"\x02")
    te.action.action.params.add(param_id=2, value=b"\x00\x00\x00\x00\x00\xa1")
    te.time_since_last_hit.elapsed_ns = 1234
    te.counter_data.byte_count, te.counter_data.packet_count = 640, 10
    te.meter_config.cir, te.meter_config.cburst, te.meter_config.pir, te.meter_config.pburst = 1, 2, 3, 4
    return te


def entry_key():
    te = p.TableEntry(table_id=0x02000001, priority=10)
    te.match.add(field_id=1).exact.value = b"\x0a\x00\x00\x01"
    return te


def vectors():
    out = []

    def add(name, msg):
        out.append({"name": name, "type": msg.DESCRIPTOR.full_name, "hex": msg.SerializeToString().hex()})

    w = p.WriteRequest(device_id=1, role_id=0, election_id=u128(0, 7), role="")
    w.updates.add(type=p.Update.INSERT).entity.table_entry.CopyFrom(table_entry())
    d = w.updates.add(type=p.Update.MODIFY).entity.table_entry
    d.table_id, d.is_default_action = 0x02000001, True
    d.action.action.action_id = 0x01000003
    u = w.updates.add(type=p.Update.MODIFY).entity.register_entry
    u.register_id, u.index.index = 0x05000001, 3
    u.data.bitstring = b"\x2a"
    u = w.updates.add(type=p.Update.MODIFY).entity.meter_entry
    u.meter_id, u.index.index = 0x05100001, 1
    u.config.cir, u.config.cburst, u.config.pir, u.config.pburst = 100, 10, 200, 20
    pre = w.updates.add(type=p.Update.INSERT).entity.packet_replication_engine_entry
    pre.multicast_group_entry.multicast_group_id = 5
    pre.multicast_group_entry.replicas.add(egress_port=1, instance=1)
    pre.multicast_group_entry.replicas.add(port=b"\x03", instance=2)
    pre = w.updates.add(type=p.Update.INSERT).entity.packet_replication_engine_entry
    cs = pre.clone_session_entry
    cs.session_id, cs.class_of_service, cs.packet_length_bytes = 10, 0, 64
    cs.replicas.add(egress_port=4, instance=0)
    de = w.updates.add(type=p.Update.INSERT).entity.digest_entry
    de.digest_id = 0x0f000001
    de.config.max_timeout_ns, de.config.max_list_size, de.config.ack_timeout_ns = 1000, 8, 5000
    w.updates.add(type=p.Update.DELETE).entity.counter_entry.counter_id = 0x12000001
    dc = w.updates.add(type=p.Update.MODIFY).entity.direct_counter_entry
    dc.table_entry.CopyFrom(entry_key())
    dc.data.byte_count, dc.data.packet_count = 0, 7
    dm = w.updates.add(type=p.Update.MODIFY).entity.direct_meter_entry
    dm.table_entry.CopyFrom(entry_key())
    dm.config.cir, dm.config.cburst, dm.config.pir, dm.config.pburst = 10, 20, 30, 40
    add("WriteRequest", w)

    r = p.ReadRequest(device_id=1, role="")
    r.entities.add().table_entry.table_id = 0x02000001
    c = r.entities.add().counter_entry
    c.counter_id, c.index.index = 0x12000001, 2
    r.entities.add().register_entry.register_id = 0
    r.entities.add().meter_entry.meter_id = 0x05100001
    r.entities.add().packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 0
    r.entities.add().digest_entry.digest_id = 0
    r.entities.add().direct_counter_entry.table_entry.table_id = 0x02000001
    r.entities.add().direct_meter_entry.table_entry.CopyFrom(entry_key())
    add("ReadRequest", r)

    rr = p.ReadResponse()
    rr.entities.add().table_entry.CopyFrom(table_entry())
    c = rr.entities.add().counter_entry
    c.counter_id, c.index.index = 0x12000001, 2
    c.data.byte_count, c.data.packet_count = 1500, 3
    g = rr.entities.add().register_entry
    g.register_id, g.index.index, g.data.bool = 0x05000002, 0, True
    m = rr.entities.add().meter_entry
    m.meter_id, m.index.index = 0x05100001, 1
    m.config.cir, m.config.cburst, m.config.pir, m.config.pburst = 100, 10, 200, 20
    dc = rr.entities.add().direct_counter_entry
    dc.table_entry.CopyFrom(entry_key())
    dc.data.byte_count, dc.data.packet_count = 6400, 100
    dm = rr.entities.add().direct_meter_entry
    dm.table_entry.CopyFrom(entry_key())
    dm.config.cir, dm.config.cburst, dm.config.pir, dm.config.pburst = 10, 20, 30, 40
    add("ReadResponse", rr)

    sr = p.StreamMessageRequest()
    a = sr.arbitration
    a.device_id, a.election_id.high, a.election_id.low = 1, 0, 9
    a.role.name = "edgenf.controller"
    add("StreamMessageRequest/arbitration", sr)
    sr = p.StreamMessageRequest()
    sr.packet.payload = bytes(range(64))
    sr.packet.metadata.add(metadata_id=1, value=b"\x02")
    add("StreamMessageRequest/packet", sr)
    sr = p.StreamMessageRequest()
    sr.digest_ack.digest_id, sr.digest_ack.list_id = 0x0f000001, 4
    add("StreamMessageRequest/digest_ack", sr)

    sp = p.StreamMessageResponse()
    a = sp.arbitration
    a.device_id, a.election_id.low = 1, 9
    a.status.code, a.status.message = 0, "primary"
    add("StreamMessageResponse/arbitration", sp)
    sp = p.StreamMessageResponse()
    sp.packet.payload = b"\xff" * 20
    sp.packet.metadata.add(metadata_id=1, value=b"\x00\x05")
    add("StreamMessageResponse/packet", sp)
    sp = p.StreamMessageResponse()
    dl = sp.digest
    dl.digest_id, dl.list_id, dl.timestamp = 0x0f000001, 4, 1_700_000_000_000_000_000
    st = dl.data.add().struct
    st.members.add().bitstring = b"\x02\x00\x00\x00\x00\x0a"
    st.members.add().bitstring = b"\x01"
    add("StreamMessageResponse/digest", sp)
    sp = p.StreamMessageResponse()
    it = sp.idle_timeout_notification
    it.timestamp = 1_700_000_000_000_000_000
    e = it.table_entry.add(table_id=0x02000001, priority=10)
    e.match.add(field_id=1).exact.value = b"\x0a\x00\x00\x01"
    add("StreamMessageResponse/idle_timeout_notification", sp)
    sp = p.StreamMessageResponse()
    se = sp.error
    se.canonical_code, se.message = 3, "packet-out metadata: missing field 1"
    se.packet_out.packet_out.payload = b"\x01\x02"
    add("StreamMessageResponse/error", sp)

    sf = p.SetForwardingPipelineConfigRequest(device_id=1, election_id=u128(0, 9), action=p.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
    sf.config.p4info.pkg_info.arch = "v1model"
    sf.config.p4_device_config = b"#include <core.p4>\n"
    sf.config.cookie.cookie = 42
    add("SetForwardingPipelineConfigRequest", sf)
    add("GetForwardingPipelineConfigRequest", p.GetForwardingPipelineConfigRequest(device_id=1, response_type=p.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE))
    gr = p.GetForwardingPipelineConfigResponse()
    gr.config.p4_device_config = b"control C() { apply {} }"
    gr.config.cookie.cookie = 42
    add("GetForwardingPipelineConfigResponse", gr)
    add("CapabilitiesResponse", p.CapabilitiesResponse(p4runtime_api_version="1.4.0"))

    s = status_pb2.Status(code=2, message="1 of 2 updates failed")
    for err in (p.Error(canonical_code=0), p.Error(canonical_code=6, message="entry exists", space="")):
        d = any_pb2.Any()
        d.Pack(err)
        s.details.append(d)
    add("google.rpc.Status", s)
    return out


TYPES = {
    "p4.v1.WriteRequest": p.WriteRequest,
    "p4.v1.ReadRequest": p.ReadRequest,
    "p4.v1.ReadResponse": p.ReadResponse,
    "p4.v1.StreamMessageRequest": p.StreamMessageRequest,
    "p4.v1.StreamMessageResponse": p.StreamMessageResponse,
    "p4.v1.SetForwardingPipelineConfigRequest": p.SetForwardingPipelineConfigRequest,
    "p4.v1.GetForwardingPipelineConfigRequest": p.GetForwardingPipelineConfigRequest,
    "p4.v1.GetForwardingPipelineConfigResponse": p.GetForwardingPipelineConfigResponse,
    "p4.v1.CapabilitiesResponse": p.CapabilitiesResponse,
    "google.rpc.Status": status_pb2.Status,
}


def check(items):
    bad = []
    for it in items:
        cls = TYPES[it["type"]]
        want, got = cls(), cls()
        want.ParseFromString(bytes.fromhex(it["hex"]))
        got.ParseFromString(bytes.fromhex(it["got"]))
        if want != got:
            bad.append({"name": it["name"], "want": str(want), "got": str(got)})
    return bad


if __name__ == "__main__":
    if sys.argv[1:] == ["make"]:
        json.dump(vectors(), sys.stdout)
    elif sys.argv[1:] == ["check"]:
        json.dump(check(json.load(sys.stdin)), sys.stdout)
    else:
        sys.exit("usage: p4runtime_vectors.py make|check")
