// Package catalog shares what the model is told about tools — name,
// description, parameters — through Redis, so step workers learn the tools of
// MCP servers they never connect to from the tool workers that do.
//
// Tool workers publish what their servers list, again every third of the TTL
// or so; step workers read the entries of the tools an agent names:
//
//	cat := catalog.New(rdb, "sw")
//	err := cat.Publish(ctx, specs, 5*time.Minute) // tool worker
//	got, err := cat.Get(ctx, []string{"get_sum"})  // step worker
//
// Layout: one hash, <prefix>:catalog, one field per tool name, the value the
// JSON of a Spec: {"name", "description", "parameters", "updated_at",
// "expires_at"}. Publishing overwrites the fields it names and leaves others
// alone, so any number of tool workers may publish the same or different
// tools. An entry not republished within its TTL is not returned (tools a
// server stopped listing fade out this way), and the whole hash expires when
// nobody has published for the longest TTL last given.
package catalog
