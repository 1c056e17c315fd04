# Drives edgenfd's P4Runtime server with finsy (PyPI, in the venv of
# scripts/requirements-finsy.txt), a controller that keeps a switch's
# pipeline across its own restarts and the switch's: it sets the pipeline
# only when the cookie the switch reports differs from the hash of its
# P4Info and program (a 64-bit value). Run by test/e2e/p4rt_finsy_test.go:
#   p4rt_finsy_check.py ADDR P4INFO.txt PROG.p4 first|again
# first: connects (finsy installs the pipeline), inserts a dmac entry;
# again (after the daemon restarted): connects and finds the entry, i.e.
# finsy saw its own cookie and did not reload the pipeline.
import asyncio, sys
from pathlib import Path
import finsy as fy
import finsy.p4client

addr, p4info, p4src, mode = sys.argv[1:5]

# finsy gives every RPC 10 s; installing a pipeline compiles the program
# (about a second on an idle machine), which a loaded CI machine can
# stretch past that
finsy.p4client._DEFAULT_RPC_TIMEOUT = 120.0


async def main():
    opts = fy.SwitchOptions(p4info=Path(p4info), p4blob=Path(p4src))
    async with fy.Switch("sw1", addr, opts) as sw:
        print("finsy cookie %#x" % sw.p4info.p4cookie)
        reply = await sw._get_pipeline_config_request()
        print("device cookie %#x" % reply.config.cookie.cookie)
        if reply.config.cookie.cookie != sw.p4info.p4cookie:
            sys.exit("FAIL: the device reports another cookie than finsy set")
        if mode == "first":
            await sw.insert([fy.P4TableEntry("dmac", match=fy.P4TableMatch({"hdr.ethernet.dstAddr": "02:00:00:00:00:0b"}),
                                             action=fy.P4TableAction("forward", port=2))])
        entries = [e async for e in sw.read(fy.P4TableEntry("dmac"))]
        print("dmac entries:", len(entries))
        if len(entries) != 1:
            sys.exit("FAIL: %d dmac entries, want 1 (finsy reloaded the pipeline?)" % len(entries))
    print("finsy %s: ok" % mode)


asyncio.run(main())
