package feed

// duplicates groups entries that share an id, or a link, and says whether
// each group agrees on its content. Groups are listed in the order of
// their first entry; a link group with the same entries as an id group is
// not listed twice.
func duplicates(entries []Entry) []Duplicate {
	out := []Duplicate{}
	seen := map[string]bool{}
	for _, by := range []string{"id", "link"} {
		groups := map[string][]int{}
		var order []string
		for i, e := range entries {
			key := e.ID
			if by == "link" {
				key = e.Link
			}
			if key == "" {
				continue
			}
			if _, ok := groups[key]; !ok {
				order = append(order, key)
			}
			groups[key] = append(groups[key], i)
		}
		for _, key := range order {
			idx := groups[key]
			if len(idx) < 2 {
				continue
			}
			sig := signature(idx)
			if seen[sig] {
				continue
			}
			seen[sig] = true
			d := Duplicate{By: by, Key: key, Entries: idx}
			d.Fields = differences(entries, idx)
			d.Conflict = len(d.Fields) > 0
			out = append(out, d)
		}
	}
	return out
}

func signature(idx []int) string {
	b := make([]byte, 0, len(idx)*4)
	for _, i := range idx {
		b = append(b, byte(i>>24), byte(i>>16), byte(i>>8), byte(i))
	}
	return string(b)
}

// differences names the fields in which any entry of the group differs
// from the group's first entry.
func differences(entries []Entry, idx []int) []string {
	first := entries[idx[0]]
	var fields []string
	add := func(name string, differs bool) {
		if differs {
			for _, f := range fields {
				if f == name {
					return
				}
			}
			fields = append(fields, name)
		}
	}
	for _, i := range idx[1:] {
		e := entries[i]
		add("id", e.ID != first.ID)
		add("title", e.Title != first.Title)
		add("link", e.Link != first.Link)
		add("summary", e.Summary != first.Summary)
		add("content", e.Content != first.Content)
		add("published", dateText(e.Published) != dateText(first.Published))
		add("updated", dateText(e.Updated) != dateText(first.Updated))
	}
	return fields
}

func dateText(d *Date) string {
	if d == nil {
		return ""
	}
	return d.Original
}
