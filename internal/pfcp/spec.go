package pfcp

// The specification's tables, as data: IE types (TS 29.244 table 8.1.2-1
// and clause 8.2), and the IEs of each message (clause 7.4, 7.5) and of each
// grouped IE. Check walks them; nothing else in the codec hard-codes a
// message's layout.

// IE types used by this package and its users (TS 29.244 table 8.1.2-1).
const (
	IECreatePDR                      IEType = 1
	IEPDI                            IEType = 2
	IECreateFAR                      IEType = 3
	IEForwardingParameters           IEType = 4
	IEDuplicatingParameters          IEType = 5
	IECreateURR                      IEType = 6
	IECreateQER                      IEType = 7
	IECreatedPDR                     IEType = 8
	IEUpdatePDR                      IEType = 9
	IEUpdateFAR                      IEType = 10
	IEUpdateForwardingParameters     IEType = 11
	IEUpdateBARReport                IEType = 12 // in a Session Report Response
	IEUpdateURR                      IEType = 13
	IEUpdateQER                      IEType = 14
	IERemovePDR                      IEType = 15
	IERemoveFAR                      IEType = 16
	IERemoveURR                      IEType = 17
	IERemoveQER                      IEType = 18
	IECause                          IEType = 19
	IESourceInterface                IEType = 20
	IEFTEID                          IEType = 21
	IENetworkInstance                IEType = 22
	IESDFFilter                      IEType = 23
	IEApplicationID                  IEType = 24
	IEGateStatus                     IEType = 25
	IEMBR                            IEType = 26
	IEGBR                            IEType = 27
	IEQERCorrelationID               IEType = 28
	IEPrecedence                     IEType = 29
	IETransportLevelMarking          IEType = 30
	IEVolumeThreshold                IEType = 31
	IETimeThreshold                  IEType = 32
	IEMonitoringTime                 IEType = 33
	IESubsequentVolumeThreshold      IEType = 34
	IESubsequentTimeThreshold        IEType = 35
	IEInactivityDetectionTime        IEType = 36
	IEReportingTriggers              IEType = 37
	IERedirectInformation            IEType = 38
	IEReportType                     IEType = 39
	IEOffendingIE                    IEType = 40
	IEForwardingPolicy               IEType = 41
	IEDestinationInterface           IEType = 42
	IEUPFunctionFeatures             IEType = 43
	IEApplyAction                    IEType = 44
	IEDownlinkDataServiceInformation IEType = 45
	IEDownlinkDataNotificationDelay  IEType = 46
	IEDLBufferingDuration            IEType = 47
	IEDLBufferingSuggestedPackets    IEType = 48
	IEPFCPSMReqFlags                 IEType = 49
	IEPFCPSRRspFlags                 IEType = 50
	IELoadControlInformation         IEType = 51
	IESequenceNumber                 IEType = 52
	IEMetric                         IEType = 53
	IEOverloadControlInformation     IEType = 54
	IETimer                          IEType = 55
	IEPDRID                          IEType = 56
	IEFSEID                          IEType = 57
	IENodeID                         IEType = 60
	IEMeasurementMethod              IEType = 62
	IEUsageReportTrigger             IEType = 63
	IEMeasurementPeriod              IEType = 64
	IEFQCSID                         IEType = 65
	IEVolumeMeasurement              IEType = 66
	IEDurationMeasurement            IEType = 67
	IETimeOfFirstPacket              IEType = 69
	IETimeOfLastPacket               IEType = 70
	IEQuotaHoldingTime               IEType = 71
	IEDroppedDLTrafficThreshold      IEType = 72
	IEVolumeQuota                    IEType = 73
	IETimeQuota                      IEType = 74
	IEStartTime                      IEType = 75
	IEEndTime                        IEType = 76
	IEQueryURR                       IEType = 77
	IEUsageReportSMR                 IEType = 78 // in a Session Modification Response
	IEUsageReportSDR                 IEType = 79 // in a Session Deletion Response
	IEUsageReportSRR                 IEType = 80 // in a Session Report Request
	IEURRID                          IEType = 81
	IELinkedURRID                    IEType = 82
	IEDownlinkDataReport             IEType = 83
	IEOuterHeaderCreation            IEType = 84
	IECreateBAR                      IEType = 85
	IEUpdateBAR                      IEType = 86 // in a Session Modification Request
	IERemoveBAR                      IEType = 87
	IEBARID                          IEType = 88
	IECPFunctionFeatures             IEType = 89
	IEUsageInformation               IEType = 90
	IEApplicationInstanceID          IEType = 91
	IEFlowInformation                IEType = 92
	IEUEIPAddress                    IEType = 93
	IEPacketRate                     IEType = 94
	IEOuterHeaderRemoval             IEType = 95
	IERecoveryTimeStamp              IEType = 96
	IEDLFlowLevelMarking             IEType = 97
	IEHeaderEnrichment               IEType = 98
	IEErrorIndicationReport          IEType = 99
	IEMeasurementInformation         IEType = 100
	IENodeReportType                 IEType = 101
	IEUserPlanePathFailureReport     IEType = 102
	IERemoteGTPUPeer                 IEType = 103
	IEURSEQN                         IEType = 104
	IEUpdateDuplicatingParameters    IEType = 105
	IEActivatePredefinedRules        IEType = 106
	IEDeactivatePredefinedRules      IEType = 107
	IEFARID                          IEType = 108
	IEQERID                          IEType = 109
	IEOCIFlags                       IEType = 110
	IEAssociationReleaseRequest      IEType = 111
	IEGracefulReleasePeriod          IEType = 112
	IEPDNType                        IEType = 113
	IEFailedRuleID                   IEType = 114
	IETimeQuotaMechanism             IEType = 115
	IEUserPlaneIPResourceInformation IEType = 116
	IEUserPlaneInactivityTimer       IEType = 117
	IEAggregatedURRs                 IEType = 118
	IEQFI                            IEType = 124
	IEQueryURRReference              IEType = 125
	IEAdditionalUsageReportsInfo     IEType = 126
	IECreateTrafficEndpoint          IEType = 127
	IECreatedTrafficEndpoint         IEType = 128
	IEUpdateTrafficEndpoint          IEType = 129
	IERemoveTrafficEndpoint          IEType = 130
	IETrafficEndpointID              IEType = 131
	IEEthernetPacketFilter           IEType = 132
	IESuggestedBufferingPackets      IEType = 140
	IEUserID                         IEType = 141
	IEEthernetPDUSessionInformation  IEType = 142
	IEEthernetTrafficInformation     IEType = 143
	IEFramedRoute                    IEType = 153
	IEAPNDNN                         IEType = 159
	IEInterfaceType3GPP              IEType = 160 // "3GPP Interface Type"
	IEPFCPSRReqFlags                 IEType = 161
	IEPFCPAUReqFlags                 IEType = 162
	IECreateMAR                      IEType = 165
	IEUEIPAddressPoolIdentity        IEType = 177
	IEAlternativeSMFIPAddress        IEType = 178
	IEPFCPASRspFlags                 IEType = 184
	IEPFCPSEReqFlags                 IEType = 186
	IESourceIPAddress                IEType = 192
	IEUEIPAddressPoolInformation     IEType = 233
	IESNSSAI                         IEType = 257
	IEPFCPASReqFlags                 IEType = 259
)

// ieSpec describes an IE type: its name, whether it is grouped, the fewest
// octets a valid one has, and a check of its contents (the typed parser)
// for the types this codec reads.
type ieSpec struct {
	Name    string
	Grouped bool
	Min     int
	Check   func([]byte) error
}

func grouped(name string) ieSpec        { return ieSpec{Name: name, Grouped: true} }
func fixed(name string, min int) ieSpec { return ieSpec{Name: name, Min: min} }
func opaque(name string) ieSpec         { return ieSpec{Name: name} }
func typed(name string, min int, check func([]byte) error) ieSpec {
	return ieSpec{Name: name, Min: min, Check: check}
}

var ieSpecs = map[IEType]ieSpec{
	IECreatePDR:                      grouped("Create PDR"),
	IEPDI:                            grouped("PDI"),
	IECreateFAR:                      grouped("Create FAR"),
	IEForwardingParameters:           grouped("Forwarding Parameters"),
	IEDuplicatingParameters:          grouped("Duplicating Parameters"),
	IECreateURR:                      grouped("Create URR"),
	IECreateQER:                      grouped("Create QER"),
	IECreatedPDR:                     grouped("Created PDR"),
	IEUpdatePDR:                      grouped("Update PDR"),
	IEUpdateFAR:                      grouped("Update FAR"),
	IEUpdateForwardingParameters:     grouped("Update Forwarding Parameters"),
	IEUpdateBARReport:                grouped("Update BAR (Session Report Response)"),
	IEUpdateURR:                      grouped("Update URR"),
	IEUpdateQER:                      grouped("Update QER"),
	IERemovePDR:                      grouped("Remove PDR"),
	IERemoveFAR:                      grouped("Remove FAR"),
	IERemoveURR:                      grouped("Remove URR"),
	IERemoveQER:                      grouped("Remove QER"),
	IECause:                          typed("Cause", 1, checkCause),
	IESourceInterface:                typed("Source Interface", 1, checkInterface),
	IEFTEID:                          typed("F-TEID", 1, func(b []byte) error { _, err := ParseFTEID(b); return err }),
	IENetworkInstance:                opaque("Network Instance"),
	IESDFFilter:                      typed("SDF Filter", 2, func(b []byte) error { _, err := ParseSDFFilter(b); return err }),
	IEApplicationID:                  opaque("Application ID"),
	IEGateStatus:                     fixed("Gate Status", 1),
	IEMBR:                            fixed("MBR", 10),
	IEGBR:                            fixed("GBR", 10),
	IEQERCorrelationID:               fixed("QER Correlation ID", 4),
	IEPrecedence:                     fixed("Precedence", 4),
	IETransportLevelMarking:          fixed("Transport Level Marking", 2),
	IEVolumeThreshold:                typed("Volume Threshold", 1, func(b []byte) error { _, err := ParseVolume(b); return err }),
	IETimeThreshold:                  fixed("Time Threshold", 4),
	IEMonitoringTime:                 fixed("Monitoring Time", 4),
	IESubsequentVolumeThreshold:      typed("Subsequent Volume Threshold", 1, func(b []byte) error { _, err := ParseVolume(b); return err }),
	IESubsequentTimeThreshold:        fixed("Subsequent Time Threshold", 4),
	IEInactivityDetectionTime:        fixed("Inactivity Detection Time", 4),
	IEReportingTriggers:              fixed("Reporting Triggers", 2),
	IERedirectInformation:            opaque("Redirect Information"),
	IEReportType:                     fixed("Report Type", 1),
	IEOffendingIE:                    fixed("Offending IE", 2),
	IEForwardingPolicy:               opaque("Forwarding Policy"),
	IEDestinationInterface:           typed("Destination Interface", 1, checkInterface),
	IEUPFunctionFeatures:             fixed("UP Function Features", 2),
	IEApplyAction:                    fixed("Apply Action", 1),
	IEDownlinkDataServiceInformation: fixed("Downlink Data Service Information", 1),
	IEDownlinkDataNotificationDelay:  fixed("Downlink Data Notification Delay", 1),
	IEDLBufferingDuration:            fixed("DL Buffering Duration", 1),
	IEDLBufferingSuggestedPackets:    fixed("DL Buffering Suggested Packet Count", 1),
	IEPFCPSMReqFlags:                 fixed("PFCPSMReq-Flags", 1),
	IEPFCPSRRspFlags:                 fixed("PFCPSRRsp-Flags", 1),
	IELoadControlInformation:         grouped("Load Control Information"),
	IESequenceNumber:                 fixed("Sequence Number", 4),
	IEMetric:                         fixed("Metric", 1),
	IEOverloadControlInformation:     grouped("Overload Control Information"),
	IETimer:                          fixed("Timer", 1),
	IEPDRID:                          fixed("PDR ID", 2),
	IEFSEID:                          typed("F-SEID", 9, func(b []byte) error { _, err := ParseFSEID(b); return err }),
	58:                               grouped("Application ID's PFDs"),
	59:                               grouped("PFD context"),
	IENodeID:                         typed("Node ID", 2, func(b []byte) error { _, err := ParseNodeID(b); return err }),
	61:                               opaque("PFD contents"),
	IEMeasurementMethod:              fixed("Measurement Method", 1),
	IEUsageReportTrigger:             fixed("Usage Report Trigger", 2),
	IEMeasurementPeriod:              fixed("Measurement Period", 4),
	IEFQCSID:                         opaque("FQ-CSID"),
	IEVolumeMeasurement:              typed("Volume Measurement", 1, func(b []byte) error { _, err := ParseVolume(b); return err }),
	IEDurationMeasurement:            fixed("Duration Measurement", 4),
	68:                               grouped("Application Detection Information"),
	IETimeOfFirstPacket:              fixed("Time of First Packet", 4),
	IETimeOfLastPacket:               fixed("Time of Last Packet", 4),
	IEQuotaHoldingTime:               fixed("Quota Holding Time", 4),
	IEDroppedDLTrafficThreshold:      opaque("Dropped DL Traffic Threshold"),
	IEVolumeQuota:                    typed("Volume Quota", 1, func(b []byte) error { _, err := ParseVolume(b); return err }),
	IETimeQuota:                      fixed("Time Quota", 4),
	IEStartTime:                      fixed("Start Time", 4),
	IEEndTime:                        fixed("End Time", 4),
	IEQueryURR:                       grouped("Query URR"),
	IEUsageReportSMR:                 grouped("Usage Report (Session Modification Response)"),
	IEUsageReportSDR:                 grouped("Usage Report (Session Deletion Response)"),
	IEUsageReportSRR:                 grouped("Usage Report (Session Report Request)"),
	IEURRID:                          fixed("URR ID", 4),
	IELinkedURRID:                    fixed("Linked URR ID", 4),
	IEDownlinkDataReport:             grouped("Downlink Data Report"),
	IEOuterHeaderCreation:            typed("Outer Header Creation", 2, func(b []byte) error { _, err := ParseOuterHeaderCreation(b); return err }),
	IECreateBAR:                      grouped("Create BAR"),
	IEUpdateBAR:                      grouped("Update BAR (Session Modification Request)"),
	IERemoveBAR:                      grouped("Remove BAR"),
	IEBARID:                          fixed("BAR ID", 1),
	IECPFunctionFeatures:             fixed("CP Function Features", 1),
	IEUsageInformation:               fixed("Usage Information", 1),
	IEApplicationInstanceID:          opaque("Application Instance ID"),
	IEFlowInformation:                opaque("Flow Information"),
	IEUEIPAddress:                    typed("UE IP Address", 1, func(b []byte) error { _, err := ParseUEIPAddress(b); return err }),
	IEPacketRate:                     opaque("Packet Rate"),
	IEOuterHeaderRemoval:             fixed("Outer Header Removal", 1),
	IERecoveryTimeStamp:              fixed("Recovery Time Stamp", 4),
	IEDLFlowLevelMarking:             opaque("DL Flow Level Marking"),
	IEHeaderEnrichment:               opaque("Header Enrichment"),
	IEErrorIndicationReport:          grouped("Error Indication Report"),
	IEMeasurementInformation:         fixed("Measurement Information", 1),
	IENodeReportType:                 fixed("Node Report Type", 1),
	IEUserPlanePathFailureReport:     grouped("User Plane Path Failure Report"),
	IERemoteGTPUPeer:                 opaque("Remote GTP-U Peer"),
	IEURSEQN:                         fixed("UR-SEQN", 4),
	IEUpdateDuplicatingParameters:    grouped("Update Duplicating Parameters"),
	IEActivatePredefinedRules:        opaque("Activate Predefined Rules"),
	IEDeactivatePredefinedRules:      opaque("Deactivate Predefined Rules"),
	IEFARID:                          fixed("FAR ID", 4),
	IEQERID:                          fixed("QER ID", 4),
	IEOCIFlags:                       fixed("OCI Flags", 1),
	IEAssociationReleaseRequest:      fixed("PFCP Association Release Request", 1),
	IEGracefulReleasePeriod:          fixed("Graceful Release Period", 1),
	IEPDNType:                        fixed("PDN Type", 1),
	IEFailedRuleID:                   fixed("Failed Rule ID", 2),
	IETimeQuotaMechanism:             fixed("Time Quota Mechanism", 5),
	IEUserPlaneIPResourceInformation: opaque("User Plane IP Resource Information"),
	IEUserPlaneInactivityTimer:       fixed("User Plane Inactivity Timer", 4),
	IEAggregatedURRs:                 grouped("Aggregated URRs"),
	IEQFI:                            fixed("QFI", 1),
	IEQueryURRReference:              fixed("Query URR Reference", 4),
	IEAdditionalUsageReportsInfo:     fixed("Additional Usage Reports Information", 2),
	IECreateTrafficEndpoint:          grouped("Create Traffic Endpoint"),
	IECreatedTrafficEndpoint:         grouped("Created Traffic Endpoint"),
	IEUpdateTrafficEndpoint:          grouped("Update Traffic Endpoint"),
	IERemoveTrafficEndpoint:          grouped("Remove Traffic Endpoint"),
	IETrafficEndpointID:              fixed("Traffic Endpoint ID", 1),
	IEEthernetPacketFilter:           grouped("Ethernet Packet Filter"),
	IESuggestedBufferingPackets:      fixed("Suggested Buffering Packets Count", 1),
	IEUserID:                         opaque("User ID"),
	IEEthernetPDUSessionInformation:  opaque("Ethernet PDU Session Information"),
	IEEthernetTrafficInformation:     grouped("Ethernet Traffic Information"),
	IEFramedRoute:                    opaque("Framed-Route"),
	IEAPNDNN:                         opaque("APN/DNN"),
	IEInterfaceType3GPP:              fixed("3GPP Interface Type", 1),
	IEPFCPSRReqFlags:                 fixed("PFCPSRReq-Flags", 1),
	IEPFCPAUReqFlags:                 fixed("PFCPAUReq-Flags", 1),
	IECreateMAR:                      grouped("Create MAR"),
	IEUEIPAddressPoolIdentity:        opaque("UE IP address Pool Identity"),
	IEAlternativeSMFIPAddress:        opaque("Alternative SMF IP Address"),
	183:                              grouped("PFCP Session Retention Information"),
	IEPFCPASRspFlags:                 fixed("PFCPASRsp-Flags", 1),
	IEPFCPSEReqFlags:                 fixed("PFCPSEReq-Flags", 1),
	187:                              grouped("User Plane Path Recovery Report"),
	IESourceIPAddress:                opaque("Source IP Address"),
	IEUEIPAddressPoolInformation:     grouped("UE IP address Pool Information"),
	238:                              grouped("GTP-U Path QoS Control Information"),
	IESNSSAI:                         fixed("S-NSSAI", 4),
	IEPFCPASReqFlags:                 fixed("PFCPASReq-Flags", 1),
}

// Presence of an IE in a message or grouped IE.
type Presence uint8

// Presence values: mandatory, conditional (the condition is the agent's to
// check: the codec accepts its absence), optional.
const (
	M Presence = iota + 1
	C
	O
)

// Field is one IE a message or grouped IE may hold.
type Field struct {
	Type     IEType
	Presence Presence
	// Multi: the IE may appear several times. A repeated IE that may not
	// is handled as the specification says: the first one counts, the
	// others are discarded (Check drops them).
	Multi bool
}

func m(t IEType) Field  { return Field{t, M, false} }
func mm(t IEType) Field { return Field{t, M, true} }
func c(t IEType) Field  { return Field{t, C, false} }
func cm(t IEType) Field { return Field{t, C, true} }
func o(t IEType) Field  { return Field{t, O, false} }
func om(t IEType) Field { return Field{t, O, true} }

// msgSpec describes a message type.
type msgSpec struct {
	Name   string
	Fields []Field
}

// The IEs of each message (TS 29.244 clause 7.4 and 7.5). IEs a message's
// table lists that a UPF neither reads nor writes are left out: Check
// discards IEs a table does not list, as it must for unknown ones.
var msgSpecs = map[MsgType]msgSpec{
	HeartbeatRequest:      {"Heartbeat Request", []Field{m(IERecoveryTimeStamp), o(IESourceIPAddress)}},
	HeartbeatResponse:     {"Heartbeat Response", []Field{m(IERecoveryTimeStamp)}},
	PFDManagementRequest:  {"PFD Management Request", nil},
	PFDManagementResponse: {"PFD Management Response", []Field{m(IECause), c(IEOffendingIE)}},
	AssociationSetupRequest: {"Association Setup Request", []Field{
		m(IENodeID), m(IERecoveryTimeStamp), c(IEUPFunctionFeatures), c(IECPFunctionFeatures),
		om(IEUserPlaneIPResourceInformation), om(IEAlternativeSMFIPAddress), o(IEPFCPASReqFlags),
		om(IEUEIPAddressPoolInformation)}},
	AssociationSetupResponse: {"Association Setup Response", []Field{
		m(IENodeID), m(IECause), m(IERecoveryTimeStamp), c(IEUPFunctionFeatures), c(IECPFunctionFeatures),
		om(IEUserPlaneIPResourceInformation), om(IEAlternativeSMFIPAddress), o(IEPFCPASRspFlags),
		om(IEUEIPAddressPoolInformation)}},
	AssociationUpdateRequest: {"Association Update Request", []Field{
		m(IENodeID), c(IEUPFunctionFeatures), c(IECPFunctionFeatures), c(IEAssociationReleaseRequest),
		c(IEGracefulReleasePeriod), om(IEUserPlaneIPResourceInformation), o(IEPFCPAUReqFlags),
		om(IEAlternativeSMFIPAddress), om(IEUEIPAddressPoolInformation)}},
	AssociationUpdateResponse: {"Association Update Response", []Field{
		m(IENodeID), m(IECause), c(IEUPFunctionFeatures), c(IECPFunctionFeatures)}},
	AssociationReleaseRequest:   {"Association Release Request", []Field{m(IENodeID)}},
	AssociationReleaseResponse:  {"Association Release Response", []Field{m(IENodeID), m(IECause)}},
	VersionNotSupportedResponse: {"Version Not Supported Response", nil},
	NodeReportRequest: {"Node Report Request", []Field{
		m(IENodeID), m(IENodeReportType), c(IEUserPlanePathFailureReport), c(187)}},
	NodeReportResponse:             {"Node Report Response", []Field{m(IENodeID), m(IECause), c(IEOffendingIE)}},
	SessionSetDeletionRequest:      {"Session Set Deletion Request", []Field{m(IENodeID), om(IEFQCSID)}},
	SessionSetDeletionResponse:     {"Session Set Deletion Response", []Field{m(IENodeID), m(IECause), c(IEOffendingIE)}},
	SessionSetModificationRequest:  {"Session Set Modification Request", []Field{m(IEAlternativeSMFIPAddress)}},
	SessionSetModificationResponse: {"Session Set Modification Response", []Field{m(IENodeID), m(IECause), c(IEOffendingIE)}},
	SessionEstablishmentRequest: {"Session Establishment Request", []Field{
		m(IENodeID), m(IEFSEID), mm(IECreatePDR), mm(IECreateFAR), cm(IECreateURR), cm(IECreateQER),
		o(IECreateBAR), cm(IECreateTrafficEndpoint), c(IEPDNType), om(IEFQCSID),
		o(IEUserPlaneInactivityTimer), o(IEUserID), o(IEAPNDNN), o(IEPFCPSEReqFlags), o(IESNSSAI)}},
	SessionEstablishmentResponse: {"Session Establishment Response", []Field{
		m(IENodeID), m(IECause), c(IEOffendingIE), c(IEFSEID), cm(IECreatedPDR), o(IELoadControlInformation),
		o(IEOverloadControlInformation), om(IEFQCSID), c(IEFailedRuleID), cm(IECreatedTrafficEndpoint)}},
	SessionModificationRequest: {"Session Modification Request", []Field{
		c(IEFSEID), cm(IERemovePDR), cm(IERemoveFAR), cm(IERemoveURR), cm(IERemoveQER), c(IERemoveBAR),
		cm(IERemoveTrafficEndpoint), cm(IECreatePDR), cm(IECreateFAR), cm(IECreateURR), cm(IECreateQER),
		c(IECreateBAR), cm(IECreateTrafficEndpoint), cm(IEUpdatePDR), cm(IEUpdateFAR), cm(IEUpdateURR),
		cm(IEUpdateQER), c(IEUpdateBAR), cm(IEUpdateTrafficEndpoint), c(IEPFCPSMReqFlags), cm(IEQueryURR),
		om(IEFQCSID), c(IEUserPlaneInactivityTimer), c(IEQueryURRReference)}},
	SessionModificationResponse: {"Session Modification Response", []Field{
		m(IECause), c(IEOffendingIE), cm(IECreatedPDR), o(IELoadControlInformation),
		o(IEOverloadControlInformation), cm(IEUsageReportSMR), c(IEFailedRuleID),
		c(IEAdditionalUsageReportsInfo), cm(IECreatedTrafficEndpoint)}},
	SessionDeletionRequest: {"Session Deletion Request", nil},
	SessionDeletionResponse: {"Session Deletion Response", []Field{
		m(IECause), c(IEOffendingIE), o(IELoadControlInformation), o(IEOverloadControlInformation),
		cm(IEUsageReportSDR), c(IEAdditionalUsageReportsInfo)}},
	SessionReportRequest: {"Session Report Request", []Field{
		m(IEReportType), c(IEDownlinkDataReport), cm(IEUsageReportSRR), c(IEErrorIndicationReport),
		o(IELoadControlInformation), o(IEOverloadControlInformation), c(IEAdditionalUsageReportsInfo),
		c(IEPFCPSRReqFlags), c(IEFSEID)}},
	SessionReportResponse: {"Session Report Response", []Field{
		m(IECause), c(IEOffendingIE), c(IEUpdateBARReport), c(IEPFCPSRRspFlags), c(IEFSEID)}},
}

// The IEs of each grouped IE (TS 29.244 clauses 7.4, 7.5, tables 7.5.x-y).
var groupSpecs = map[IEType][]Field{
	IECreatePDR: {m(IEPDRID), m(IEPrecedence), m(IEPDI), c(IEOuterHeaderRemoval), c(IEFARID),
		cm(IEURRID), cm(IEQERID), cm(IEActivatePredefinedRules)},
	IEPDI: {m(IESourceInterface), c(IEFTEID), o(IENetworkInstance), cm(IEUEIPAddress),
		c(IETrafficEndpointID), cm(IESDFFilter), c(IEApplicationID), o(IEEthernetPDUSessionInformation),
		cm(IEEthernetPacketFilter), cm(IEQFI), cm(IEFramedRoute), o(IEInterfaceType3GPP)},
	IECreateFAR: {m(IEFARID), m(IEApplyAction), c(IEForwardingParameters), cm(IEDuplicatingParameters), o(IEBARID)},
	IEForwardingParameters: {m(IEDestinationInterface), o(IENetworkInstance), c(IERedirectInformation),
		c(IEOuterHeaderCreation), c(IETransportLevelMarking), c(IEForwardingPolicy), o(IEHeaderEnrichment),
		c(IETrafficEndpointID), o(IEInterfaceType3GPP)},
	IEDuplicatingParameters: {m(IEDestinationInterface), c(IEOuterHeaderCreation), c(IETransportLevelMarking), c(IEForwardingPolicy)},
	IECreateURR: {m(IEURRID), m(IEMeasurementMethod), m(IEReportingTriggers), c(IEMeasurementPeriod),
		c(IEVolumeThreshold), c(IEVolumeQuota), c(IETimeThreshold), c(IETimeQuota), c(IEQuotaHoldingTime),
		c(IEDroppedDLTrafficThreshold), o(IEMonitoringTime), o(IESubsequentVolumeThreshold),
		o(IESubsequentTimeThreshold), c(IEInactivityDetectionTime), cm(IELinkedURRID),
		c(IEMeasurementInformation), c(IETimeQuotaMechanism), cm(IEAggregatedURRs)},
	IECreateQER: {m(IEQERID), c(IEQERCorrelationID), m(IEGateStatus), c(IEMBR), c(IEGBR), c(IEPacketRate),
		c(IEDLFlowLevelMarking), c(IEQFI), c(123 /* RQI */)},
	IECreatedPDR: {m(IEPDRID), c(IEFTEID), cm(IEUEIPAddress)},
	IEUpdatePDR: {m(IEPDRID), c(IEOuterHeaderRemoval), c(IEPrecedence), c(IEPDI), c(IEFARID),
		cm(IEURRID), cm(IEQERID), cm(IEActivatePredefinedRules), cm(IEDeactivatePredefinedRules)},
	IEUpdateFAR: {m(IEFARID), c(IEApplyAction), c(IEUpdateForwardingParameters), cm(IEUpdateDuplicatingParameters), c(IEBARID)},
	IEUpdateForwardingParameters: {c(IEDestinationInterface), c(IENetworkInstance), c(IERedirectInformation),
		c(IEOuterHeaderCreation), c(IETransportLevelMarking), c(IEForwardingPolicy), c(IEHeaderEnrichment),
		c(IEPFCPSMReqFlags), c(IETrafficEndpointID), o(IEInterfaceType3GPP)},
	IEUpdateDuplicatingParameters: {c(IEDestinationInterface), c(IEOuterHeaderCreation), c(IETransportLevelMarking), c(IEForwardingPolicy)},
	IEUpdateBARReport: {m(IEBARID), c(IEDownlinkDataNotificationDelay), c(IEDLBufferingDuration),
		o(IEDLBufferingSuggestedPackets), c(IESuggestedBufferingPackets)},
	IEUpdateURR: {m(IEURRID), c(IEMeasurementMethod), c(IEReportingTriggers), c(IEMeasurementPeriod),
		c(IEVolumeThreshold), c(IEVolumeQuota), c(IETimeThreshold), c(IETimeQuota), c(IEQuotaHoldingTime),
		c(IEDroppedDLTrafficThreshold), c(IEMonitoringTime), c(IESubsequentVolumeThreshold),
		c(IESubsequentTimeThreshold), c(IEInactivityDetectionTime), cm(IELinkedURRID),
		c(IEMeasurementInformation), c(IETimeQuotaMechanism), cm(IEAggregatedURRs)},
	IEUpdateQER: {m(IEQERID), c(IEQERCorrelationID), c(IEGateStatus), c(IEMBR), c(IEGBR), c(IEPacketRate),
		c(IEDLFlowLevelMarking), c(IEQFI), c(123 /* RQI */)},
	IERemovePDR:                  {m(IEPDRID)},
	IERemoveFAR:                  {m(IEFARID)},
	IERemoveURR:                  {m(IEURRID)},
	IERemoveQER:                  {m(IEQERID)},
	IEQueryURR:                   {m(IEURRID)},
	IECreateBAR:                  {m(IEBARID), c(IEDownlinkDataNotificationDelay), c(IESuggestedBufferingPackets)},
	IEUpdateBAR:                  {m(IEBARID), c(IEDownlinkDataNotificationDelay), c(IESuggestedBufferingPackets)},
	IERemoveBAR:                  {m(IEBARID)},
	IEUsageReportSMR:             usageReport,
	IEUsageReportSDR:             usageReport,
	IEUsageReportSRR:             usageReport,
	IEDownlinkDataReport:         {mm(IEPDRID), cm(IEDownlinkDataServiceInformation)},
	IEErrorIndicationReport:      {mm(IEFTEID)},
	IELoadControlInformation:     {m(IESequenceNumber), m(IEMetric)},
	IEOverloadControlInformation: {m(IESequenceNumber), m(IEMetric), m(IETimer), c(IEOCIFlags)},
	IEUserPlanePathFailureReport: {mm(IERemoteGTPUPeer)},
	IEUEIPAddressPoolInformation: {m(IEUEIPAddressPoolIdentity), o(IENetworkInstance)},
}

var usageReport = []Field{m(IEURRID), m(IEURSEQN), m(IEUsageReportTrigger), c(IEStartTime), c(IEEndTime),
	c(IEVolumeMeasurement), c(IEDurationMeasurement), c(IETimeOfFirstPacket), c(IETimeOfLastPacket),
	c(IEUsageInformation), c(IEQueryURRReference), c(IEUEIPAddress), c(IENetworkInstance)}

// Fields returns the IEs message type t may hold (nil for an unknown type).
func Fields(t MsgType) []Field { return msgSpecs[t].Fields }

// GroupFields returns the IEs a grouped IE of type t may hold.
func GroupFields(t IEType) []Field { return groupSpecs[t] }

// Known reports whether t is a message type of the specification.
func (t MsgType) Known() bool { _, ok := msgSpecs[t]; return ok }
