# Interoperability check of edgenfd's P4Runtime server against the P4Runtime
# client code generated from p4lang's own .proto files (PyPI: p4runtime,
# grpcio). Run by scripts/p4rt-interop.sh; not part of make test (PyPI).
import sys, time, queue, threading
import grpc
from p4.v1 import p4runtime_pb2 as p4r, p4runtime_pb2_grpc as p4g
from p4.config.v1 import p4info_pb2

addr, src_path = sys.argv[1], sys.argv[2]
if len(sys.argv) > 3:  # TLS: CA, client certificate, client key
    ca, cert, key = (open(p, "rb").read() for p in sys.argv[3:6])
    ch = grpc.secure_channel(addr, grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert))
else:  # a unix socket (unix:PATH): root's, no TLS
    ch = grpc.insecure_channel(addr)
grpc.channel_ready_future(ch).result(timeout=10)
stub = p4g.P4RuntimeStub(ch)
print("capabilities:", stub.Capabilities(p4r.CapabilitiesRequest()).p4runtime_api_version)

reqs = queue.Queue()
def gen():
    while True:
        r = reqs.get()
        if r is None:
            return
        yield r
resps = queue.Queue()
stream = stub.StreamChannel(gen())
threading.Thread(target=lambda: [resps.put(m) for m in stream], daemon=True).start()
arb = p4r.StreamMessageRequest()
arb.arbitration.device_id = 1
arb.arbitration.election_id.low = 1
reqs.put(arb)
m = resps.get(timeout=10)
print("arbitration:", m.WhichOneof("update"), "status", m.arbitration.status.code)
assert m.arbitration.status.code == 0

eid = p4r.Uint128(high=0, low=1)
cfg = p4r.ForwardingPipelineConfig(p4_device_config=open(src_path, "rb").read())
cfg.cookie.cookie = 7
stub.SetForwardingPipelineConfig(p4r.SetForwardingPipelineConfigRequest(device_id=1, election_id=eid,
    action=p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT, config=cfg))
got = stub.GetForwardingPipelineConfig(p4r.GetForwardingPipelineConfigRequest(device_id=1))
info = got.config.p4info
print("cookie:", got.config.cookie.cookie, "tables:", [t.preamble.name for t in info.tables],
      "digests:", [d.preamble.name for d in info.digests])
tab = {t.preamble.name.split(".")[-1]: t for t in info.tables}
act = {a.preamble.name.split(".")[-1]: a for a in info.actions}
smac, dmac = tab["smac"], tab["dmac"]
print("smac idle_timeout_behavior:", p4info_pb2.Table.IdleTimeoutBehavior.Name(smac.idle_timeout_behavior))

def write(*updates):
    stub.Write(p4r.WriteRequest(device_id=1, election_id=eid, updates=list(updates)))

u = p4r.Update(type=p4r.Update.INSERT)
te = u.entity.table_entry
te.table_id = dmac.preamble.id
fm = te.match.add(); fm.field_id = dmac.match_fields[0].id; fm.exact.value = bytes([2, 0, 0, 0, 0, 0x0b])
te.action.action.action_id = act["forward"].preamble.id
p = te.action.action.params.add(); p.param_id = act["forward"].params[0].id; p.value = b"\x02"
te.metadata = b"interop"
u2 = p4r.Update(type=p4r.Update.INSERT)
te2 = u2.entity.table_entry
te2.table_id = smac.preamble.id
fm = te2.match.add(); fm.field_id = smac.match_fields[0].id; fm.exact.value = bytes([2, 0, 0, 0, 0, 0x0c])
te2.action.action.action_id = act["NoAction"].preamble.id
te2.idle_timeout_ns = 1_000_000_000
write(u, u2)

rr = p4r.ReadRequest(device_id=1)
e = rr.entities.add(); e.table_entry.table_id = 0
e.table_entry.time_since_last_hit.SetInParent()
for resp in stub.Read(rr):
    for ent in resp.entities:
        t = ent.table_entry
        print("read:", t.table_id == dmac.preamble.id and "dmac" or "smac", t.match[0].exact.value.hex(),
              "meta", t.metadata, "idle_timeout_ns", t.idle_timeout_ns,
              "since_hit", t.time_since_last_hit.elapsed_ns if t.HasField("time_since_last_hit") else None)

deadline = time.time() + 6
while time.time() < deadline:
    try:
        m = resps.get(timeout=0.5)
    except queue.Empty:
        continue
    if m.WhichOneof("update") == "idle_timeout_notification":
        n = m.idle_timeout_notification
        print("idle timeout notification:", n.table_entry[0].table_id == smac.preamble.id, n.table_entry[0].match[0].exact.value.hex(),
              n.table_entry[0].idle_timeout_ns)
        break
else:
    print("NO idle timeout notification"); sys.exit(1)

try:
    bad = p4r.ReadRequest(device_id=1)
    bad.entities.add().table_entry.table_id = 12345
    list(stub.Read(bad))
    print("NO error for a bad table id"); sys.exit(1)
except grpc.RpcError as err:
    print("bad table id:", err.code().name, "-", err.details())
reqs.put(None)
print("interop OK")
