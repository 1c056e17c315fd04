package p4info

// DirectMeter mirrors p4.config.v1.DirectMeter.
type DirectMeter struct {
	Preamble      Preamble  `json:"preamble"`
	Spec          MeterSpec `json:"spec"`
	DirectTableID uint32    `json:"directTableId"`
}
