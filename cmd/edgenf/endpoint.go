package main

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/edgenf/edgenf/internal/endpoint"
	"github.com/spf13/cobra"
)

// endpointCmd shows the workloads (pods) the CNI plugin plugged into
// tenants' cubes; deleting one is for an administrator cleaning up after a
// runtime that is gone (the runtime's CNI DEL or GC normally does it).
func endpointCmd() *cobra.Command {
	c := &cobra.Command{Use: "endpoint", Aliases: []string{"endpoints", "ep"}, Short: "Pods plugged into tenants' cubes by edgenf-cni"}
	list := &cobra.Command{
		Use: "list", Aliases: []string{"ls"}, Short: "List endpoints (a tenant token sees its own)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var out []endpoint.Endpoint
			if err := api().Do("GET", "/v1/endpoints", nil, &out); err != nil {
				return err
			}
			return show(os.Stdout, out, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "NAME\tTENANT\tSLICE\tCUBE\tPOD\tADDRESSES")
				for _, e := range out {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Name, dash(e.Tenant), dash(e.Slice), e.Cube, dash(podOf(&e)), dash(strings.Join(e.Addresses, " ")))
				}
			})
		},
	}
	get := &cobra.Command{
		Use: "get NAME", Short: "Show an endpoint", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var e endpoint.Endpoint
			if err := api().Do("GET", "/v1/endpoints/"+args[0], nil, &e); err != nil {
				return err
			}
			return show(os.Stdout, e, func(tw *tabwriter.Writer) {
				for _, row := range [][2]string{
					{"Name", e.Name}, {"Tenant", dash(e.Tenant)}, {"Slice", dash(e.Slice)}, {"Cube", e.Cube},
					{"Port", e.Cube + ":" + e.Name}, {"Interface", e.Interface}, {"Pod", dash(podOf(&e))},
					{"Network", dash(e.Network)}, {"Container", dash(e.ContainerID)}, {"Pod interface", dash(e.IfName)},
					{"MAC", dash(e.MAC)}, {"Addresses", dash(strings.Join(e.Addresses, " "))}, {"Gateways", dash(strings.Join(e.Gateways, " "))},
				} {
					fmt.Fprintf(tw, "%s:\t%s\n", row[0], row[1])
				}
			})
		},
	}
	del := &cobra.Command{
		Use: "del NAME", Aliases: []string{"delete", "rm"}, Short: "Unplug an endpoint: its port and its interface (administrator)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return api().Do("DELETE", "/v1/endpoints/"+args[0], nil, nil)
		},
	}
	c.AddCommand(list, get, del)
	return c
}

func podOf(e *endpoint.Endpoint) string {
	if e.Pod == nil || e.Pod.Name == "" {
		return ""
	}
	return e.Pod.Namespace + "/" + e.Pod.Name
}
