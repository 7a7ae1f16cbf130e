//! Acceptance and rejection of polygon prisms.

mod support;

use GeometryType::Polygon;
use support::{accept, assert_close, length, message, reject};
use zonecast_geometry::{GeometryType, Shape, Vec3, validate_within};

const UP: Vec3 = [0.0, 0.0, 1.0];

/// Polygon rows: the vertices, then `[h,0,0]` and the axis.
fn prism(vertices: &[Vec3], height: f64, axis: Vec3) -> Vec<Vec3> {
    let mut rows = vertices.to_vec();
    rows.push([height, 0.0, 0.0]);
    rows.push(axis);
    rows
}

fn unit_square() -> Vec<Vec3> {
    vec![[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0]]
}

/// `n` vertices evenly on a circle of radius `r` around `(cx, cy)` at height `z`.
fn regular(n: usize, r: f64, (cx, cy): (f64, f64), z: f64) -> Vec<Vec3> {
    (0..n)
        .map(|k| {
            let t = std::f64::consts::TAU * k as f64 / n as f64;
            [cx + r * t.cos(), cy + r * t.sin(), z]
        })
        .collect()
}

#[test]
fn a_square_prism_keeps_its_vertices_and_height() {
    let shape = accept(Polygon, &prism(&unit_square(), 2.5, UP));
    assert_eq!(shape, Shape::Polygon { vertices: unit_square(), height: 2.5, axis: UP });
}

#[test]
fn a_triangle_is_enough() {
    let triangle = [[0.0, 0.0, 1.0], [4.0, 0.0, 1.0], [0.0, 3.0, 1.0]];
    accept(Polygon, &prism(&triangle, 1.0, UP));
}

#[test]
fn a_concave_polygon_is_accepted_in_either_winding() {
    let l_shape =
        [[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [2.0, 1.0, 0.0], [1.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 2.0, 0.0]];
    accept(Polygon, &prism(&l_shape, 1.0, UP));
    let reversed: Vec<Vec3> = l_shape.iter().rev().copied().collect();
    accept(Polygon, &prism(&reversed, 1.0, [0.0, 0.0, -1.0]));
}

#[test]
fn the_axis_is_normalised_and_may_be_oblique() {
    let Shape::Polygon { axis, .. } = accept(Polygon, &prism(&unit_square(), 1.0, [3.0, 0.0, 4.0])) else {
        panic!("not a polygon")
    };
    assert_close(axis, [0.6, 0.0, 0.8]);
}

#[test]
fn a_polygon_in_a_tilted_plane_is_accepted() {
    // The plane z = x, swept along a direction between its normal and the vertical.
    let tilted = [[0.0, 0.0, 0.0], [2.0, 0.0, 2.0], [2.0, 3.0, 2.0], [0.0, 3.0, 0.0]];
    let Shape::Polygon { axis, .. } = accept(Polygon, &prism(&tilted, 1.0, [-1.0, 0.0, 3.0])) else {
        panic!("not a polygon")
    };
    assert!((length(axis) - 1.0).abs() < 1e-15);
}

#[test]
fn a_closing_vertex_equal_to_the_first_is_dropped() {
    let mut closed = unit_square();
    closed.push([0.0, 0.0, 0.0]);
    let Shape::Polygon { vertices, .. } = accept(Polygon, &prism(&closed, 1.0, UP)) else { panic!("not a polygon") };
    assert_eq!(vertices, unit_square());
}

#[test]
fn vertices_within_a_millimetre_of_the_plane_are_coplanar() {
    let d = 0.0009;
    let saddle = [[0.0, 0.0, d], [1.0, 0.0, -d], [1.0, 1.0, d], [0.0, 1.0, -d]];
    accept(Polygon, &prism(&saddle, 1.0, UP));
}

#[test]
fn the_vertex_bound_takes_that_many_vertices_and_not_one_more() {
    let many = regular(1000, 100.0, (0.0, 0.0), 0.0);
    validate_within(Polygon, &prism(&many, 1.0, UP), 1000).unwrap();
    // A closing vertex does not count.
    let mut closed = many.clone();
    closed.push(many[0]);
    validate_within(Polygon, &prism(&closed, 1.0, UP), 1000).unwrap();

    let too_many = regular(1001, 100.0, (0.0, 0.0), 0.0);
    assert_eq!(
        validate_within(Polygon, &prism(&too_many, 1.0, UP), 1000).unwrap_err().to_string(),
        "GeometryData: polygon takes at most 1000 vertices, got 1001"
    );
    // Without a bound, as for zones read back from the store.
    accept(Polygon, &prism(&too_many, 1.0, UP));
}

#[test]
fn fewer_than_five_rows_are_rejected() {
    for got in 0..5 {
        assert_eq!(
            message(Polygon, &vec![[1.0, 1.0, 1.0]; got]),
            format!("GeometryData: polygon takes at least 5 rows (3 or more vertices, [h,0,0], [axis]), got {got}")
        );
    }
}

#[test]
fn a_triangle_whose_last_vertex_only_closes_it_is_too_few_vertices() {
    let two_and_closing = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]];
    assert_eq!(
        message(Polygon, &prism(&two_and_closing, 1.0, UP)),
        "GeometryData: polygon needs at least 3 vertices, got 2 (not counting the closing vertex)"
    );
}

#[test]
fn a_zero_or_negative_height_is_rejected_in_the_height_row() {
    for h in [0.0, -1.0] {
        assert_eq!(message(Polygon, &prism(&unit_square(), h, UP)), "GeometryData[4]: height must be > 0");
    }
}

#[test]
fn a_zero_axis_is_rejected_in_the_axis_row() {
    assert_eq!(message(Polygon, &prism(&unit_square(), 1.0, [0.0; 3])), "GeometryData[5]: axis must not be zero");
}

#[test]
fn a_non_finite_vertex_is_rejected() {
    let mut square = unit_square();
    square[2][1] = f64::NAN;
    assert_eq!(message(Polygon, &prism(&square, 1.0, UP)), "GeometryData[2]: numbers must be finite");
}

#[test]
fn a_repeated_vertex_is_a_zero_length_edge() {
    let mut rows = unit_square();
    rows.insert(2, rows[1]);
    assert_eq!(
        message(Polygon, &prism(&rows, 1.0, UP)),
        "GeometryData[2]: vertex repeats the previous one (zero-length edge)"
    );
}

#[test]
fn a_doubled_closing_vertex_is_a_zero_length_edge() {
    let mut rows = unit_square();
    rows.push(rows[0]);
    rows.push(rows[0]);
    assert_eq!(
        message(Polygon, &prism(&rows, 1.0, UP)),
        "GeometryData[4]: vertex repeats the first vertex (zero-length edge)"
    );
}

#[test]
fn vertices_off_the_plane_are_rejected_with_the_distance() {
    let d = 0.0123;
    let saddle = [[0.0, 0.0, d], [1.0, 0.0, -d], [1.0, 1.0, d], [0.0, 1.0, -d]];
    assert_eq!(
        message(Polygon, &prism(&saddle, 1.0, UP)),
        "GeometryData[0]: vertices are not coplanar (0.0123 m off the plane, tolerance 0.001 m)"
    );
}

#[test]
fn the_vertex_farthest_off_the_plane_is_named() {
    let mut rows = regular(8, 5.0, (0.0, 0.0), 0.0);
    rows[5][2] = 0.5;
    let e = reject(Polygon, &prism(&rows, 1.0, UP));
    assert_eq!(e.row, Some(5));
    assert!(e.message.starts_with("vertices are not coplanar ("), "{}", e.message);
}

#[test]
fn a_symmetric_bow_tie_is_rejected_as_self_intersecting() {
    let bow_tie = [[0.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]];
    assert_eq!(message(Polygon, &prism(&bow_tie, 1.0, UP)), "GeometryData: polygon edges 0 and 2 intersect");
}

#[test]
fn a_lopsided_bow_tie_is_rejected_as_self_intersecting() {
    let bow_tie = [[0.0, 0.0, 0.0], [3.0, 1.0, 0.0], [3.0, 0.0, 0.0], [0.0, 2.0, 0.0]];
    assert_eq!(message(Polygon, &prism(&bow_tie, 1.0, UP)), "GeometryData: polygon edges 0 and 2 intersect");
}

#[test]
fn a_vertex_touching_another_edge_is_rejected() {
    let pinched = [[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [2.0, 2.0, 0.0], [1.0, 0.0, 0.0], [0.0, 2.0, 0.0]];
    assert_eq!(message(Polygon, &prism(&pinched, 1.0, UP)), "GeometryData: polygon edges 0 and 2 touch");
}

#[test]
fn a_figure_eight_through_one_vertex_is_rejected() {
    let eight = [
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [1.0, 1.0, 0.0],
        [2.0, 1.0, 0.0],
        [2.0, 2.0, 0.0],
        [1.0, 2.0, 0.0],
        [1.0, 1.0, 0.0],
        [0.0, 1.0, 0.0],
    ];
    assert_eq!(message(Polygon, &prism(&eight, 1.0, UP)), "GeometryData: polygon edges 1 and 5 touch");
}

#[test]
fn an_edge_folding_back_onto_its_neighbour_is_rejected() {
    let spike = [[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0]];
    assert_eq!(message(Polygon, &prism(&spike, 1.0, UP)), "GeometryData: polygon edges 0 and 1 overlap");
}

#[test]
fn collinear_vertices_have_zero_area() {
    let line = [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [3.0, 3.0, 3.0]];
    assert_eq!(message(Polygon, &prism(&line, 1.0, UP)), "GeometryData: polygon has zero area");
}

#[test]
fn a_polygon_under_a_square_millimetre_has_zero_area() {
    let tiny = [[0.0, 0.0, 0.0], [0.001, 0.0, 0.0], [0.0, 0.001, 0.0]];
    assert_eq!(message(Polygon, &prism(&tiny, 1.0, UP)), "GeometryData: polygon has zero area");
    let small = [[0.0, 0.0, 0.0], [0.002, 0.0, 0.0], [0.0, 0.002, 0.0]];
    accept(Polygon, &prism(&small, 1.0, UP));
}

#[test]
fn an_axis_in_the_polygons_plane_is_rejected() {
    for axis in [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0005]] {
        assert_eq!(
            message(Polygon, &prism(&unit_square(), 1.0, axis)),
            "GeometryData[5]: axis lies in the polygon's plane"
        );
    }
    // Just steep enough.
    accept(Polygon, &prism(&unit_square(), 1.0, [1.0, 0.0, 0.002]));
}

#[test]
fn enormous_coordinates_are_rejected_without_panicking() {
    let huge = [[-1e308, -1e308, 0.0], [1e308, -1e308, 0.0], [1e308, 1e308, 0.0], [-1e308, 1e308, 0.0]];
    assert_eq!(message(Polygon, &prism(&huge, 1.0, UP)), "GeometryData: polygon coordinates are too large");
}
