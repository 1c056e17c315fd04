package lb

import "github.com/google/gopacket"

type (
	gopacketBuffer    = gopacket.SerializeBuffer
	gopacketOpts      = gopacket.SerializeOptions
	gopacketLayerType = gopacket.LayerType
)

var payloadType = gopacket.LayerTypePayload
