package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/edgenf/edgenf/internal/client"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/spf13/cobra"
)

// tenantView is a tenant as the API reports it.
type tenantView struct {
	Name       string       `json:"name"`
	Interfaces []string     `json:"interfaces,omitempty"`
	Quota      tenant.Quota `json:"quota,omitempty"`
	CubePrefix string       `json:"cube_prefix,omitempty"`
	Source     string       `json:"source"`
	Quotas     []struct {
		Name  string `json:"name"`
		Limit int64  `json:"limit"`
		Used  *int64 `json:"used,omitempty"`
	} `json:"quotas"`
}

func tenantCmd() *cobra.Command {
	c := &cobra.Command{Use: "tenant", Short: "Tenants: the interfaces each may use, quotas and usage"}
	list := &cobra.Command{
		Use: "list", Aliases: []string{"ls"}, Short: "List tenants (a tenant token sees itself)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var out []tenantView
			if err := api().Do("GET", "/v1/tenants", nil, &out); err != nil {
				return err
			}
			return show(os.Stdout, out, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "NAME\tSOURCE\tINTERFACES\tCUBES")
				for _, t := range out {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, t.Source, dash(strings.Join(t.Interfaces, " ")), t.usage(tenant.Cubes))
				}
			})
		},
	}
	get := &cobra.Command{
		Use: "get NAME", Short: "Show a tenant: its interfaces and its usage against each quota",
		Example: "  edgenf tenant get red",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var t tenantView
			if err := api().Do("GET", v1("tenants", args[0]), nil, &t); err != nil {
				return err
			}
			return show(os.Stdout, t, func(tw *tabwriter.Writer) { tenantTable(tw, t) })
		},
	}
	var ifaces []string
	var quotas []string
	var prefix string
	set := &cobra.Command{
		Use:   "set NAME",
		Short: "Declare a tenant or change it (administrator)",
		Long: "Gives a tenant the interfaces its cubes may be peered with, attached to and mirror to\n" +
			"(--interface, the whole list), and sets quotas (--quota NAME=LIMIT, others kept;\n" +
			"NAME=default goes back to the default). Quotas: " + strings.Join(tenant.Names, ", ") + ".\n" +
			"--cube-prefix gives the tenant its own part of the cube names (\"\" takes it away).",
		Example: "  edgenf tenant set red --interface veth-r0 --interface veth-r1\n  edgenf tenant set red --quota cubes=10 --quota kernel_memory_bytes=256M\n  edgenf tenant set red --cube-prefix red-",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := tenant.Tenant{Name: args[0], Quota: tenant.Quota{}}
			var cur tenantView
			err := api().Do("GET", v1("tenants", args[0]), nil, &cur)
			var ae *client.Error
			switch {
			case err == nil:
				body.Interfaces, body.Quota, body.CubePrefix = cur.Interfaces, cur.Quota, cur.CubePrefix
				if body.Quota == nil {
					body.Quota = tenant.Quota{}
				}
			case errors.As(err, &ae) && ae.Code == 404:
			default:
				return err
			}
			if cmd.Flags().Changed("interface") {
				body.Interfaces = ifaces
			}
			if cmd.Flags().Changed("cube-prefix") {
				body.CubePrefix = prefix
			}
			for _, q := range quotas {
				if name, ok := strings.CutSuffix(q, "=default"); ok {
					delete(body.Quota, name)
					continue
				}
				name, v, err := tenant.Parse(q)
				if err != nil {
					return err
				}
				body.Quota[name] = v
			}
			var out tenantView
			if err := api().Do("PUT", v1("tenants", args[0]), body, &out); err != nil {
				return err
			}
			return show(os.Stdout, out, func(tw *tabwriter.Writer) { tenantTable(tw, out) })
		},
	}
	set.Flags().StringArrayVar(&ifaces, "interface", nil, "an interface the tenant may use (repeatable; the whole list)")
	set.Flags().StringArrayVar(&quotas, "quota", nil, "NAME=LIMIT (K, M, G suffixes) or NAME=default (repeatable)")
	set.Flags().StringVar(&prefix, "cube-prefix", "", "the start of the names of the tenant's cubes, no one else's")
	del := &cobra.Command{
		Use: "del NAME", Aliases: []string{"delete", "rm"}, Short: "Remove a tenant's record (its cubes stay; defaults apply)",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := api().Do("DELETE", v1("tenants", args[0]), nil, nil); err != nil {
				return err
			}
			fmt.Printf("tenant %s: record removed\n", args[0])
			return nil
		},
	}
	c.AddCommand(list, get, set, del)
	return c
}

// usage shows one quota as used/limit.
func (t tenantView) usage(name string) string {
	for _, q := range t.Quotas {
		if q.Name == name {
			if q.Used == nil {
				return fmt.Sprint(q.Limit)
			}
			return fmt.Sprintf("%d/%d", *q.Used, q.Limit)
		}
	}
	return "-"
}

func tenantTable(tw *tabwriter.Writer, t tenantView) {
	fmt.Fprintf(tw, "Name:\t%s\nSource:\t%s\nInterfaces:\t%s\n", t.Name, t.Source, dash(strings.Join(t.Interfaces, " ")))
	if t.CubePrefix != "" {
		fmt.Fprintf(tw, "Cube prefix:\t%s\n", t.CubePrefix)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "QUOTA\tUSED\tLIMIT")
	for _, q := range t.Quotas {
		used := "-"
		if q.Used != nil {
			used = fmt.Sprint(*q.Used)
		}
		limit := fmt.Sprint(q.Limit)
		if _, set := t.Quota[q.Name]; !set {
			limit += " (default)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", q.Name, used, limit)
	}
}
