package usagetab

import "testing"

func TestAddAfterTable(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Add after Table did not panic")
		}
	}()
	var b Builder
	b.Add(ContentUsage, 1, []byte("train-ai=n"))
	b.Table()
	b.Add(ContentUsage, 2, []byte("train-ai=y"))
}
