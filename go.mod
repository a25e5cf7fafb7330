module github.com/f9014239/robots

go 1.26.8
