//! Parquet: read with the arrow reader batch by batch and turn each row into a JSON object, so
//! the format adapters see the same `serde_json::Value` whatever the container.

use std::fs::File;
use std::ops::ControlFlow;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{Array, RecordBatch, StructArray};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::{Map, Value};

use super::RawRecord;
use crate::dataset::error::{Location, Position};

pub(super) fn read(
    file: File,
    shown: &str,
    sink: &mut dyn FnMut(RawRecord) -> ControlFlow<()>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)?.build()?;
    let mut row = 0u64;
    for batch in reader {
        let batch = batch?;
        for i in 0..batch.num_rows() {
            let location = Location::new(shown, Position::Row(row));
            row += 1;
            let record = match row_value(&batch, i) {
                Ok(value) => RawRecord::ok(location, value),
                Err(message) => RawRecord::bad(location, message),
            };
            if sink(record).is_break() {
                return Ok(());
            }
        }
    }
    if row == 0 {
        let _ = sink(RawRecord::bad(
            Location::new(shown, Position::File),
            "Parquet file has no rows",
        ));
    }
    Ok(())
}

fn row_value(batch: &RecordBatch, i: usize) -> Result<Value, String> {
    let schema = batch.schema();
    let mut object = Map::new();
    for (field, column) in schema.fields().iter().zip(batch.columns()) {
        object.insert(field.name().clone(), cell(column.as_ref(), i)?);
    }
    Ok(Value::Object(object))
}

fn mismatch(data_type: &DataType) -> String {
    format!("Parquet column of type {data_type} does not hold what its type says")
}

/// One cell as JSON: numbers, strings, lists, structs and maps as their JSON counterparts.
fn cell(array: &dyn Array, i: usize) -> Result<Value, String> {
    if array.is_null(i) {
        return Ok(Value::Null);
    }
    match scalar_cell(array, i)? {
        Some(value) => Ok(value),
        None => nested_cell(array, i),
    }
}

/// A cell of a scalar type (null, boolean, number, string, binary); `None` for other types.
fn scalar_cell(array: &dyn Array, i: usize) -> Result<Option<Value>, String> {
    let data_type = array.data_type();
    let bad = || mismatch(data_type);
    macro_rules! int {
        ($t:ty) => {
            Value::from(array.as_primitive_opt::<$t>().ok_or_else(bad)?.value(i))
        };
    }
    Ok(Some(match data_type {
        DataType::Null => Value::Null,
        DataType::Boolean => Value::Bool(array.as_boolean_opt().ok_or_else(bad)?.value(i)),
        DataType::Int8 => int!(Int8Type),
        DataType::Int16 => int!(Int16Type),
        DataType::Int32 => int!(Int32Type),
        DataType::Int64 => int!(Int64Type),
        DataType::UInt8 => int!(UInt8Type),
        DataType::UInt16 => int!(UInt16Type),
        DataType::UInt32 => int!(UInt32Type),
        DataType::UInt64 => int!(UInt64Type),
        DataType::Float32 => float(f64::from(
            array
                .as_primitive_opt::<Float32Type>()
                .ok_or_else(bad)?
                .value(i),
        )),
        DataType::Float64 => float(
            array
                .as_primitive_opt::<Float64Type>()
                .ok_or_else(bad)?
                .value(i),
        ),
        DataType::Utf8 => Value::from(array.as_string_opt::<i32>().ok_or_else(bad)?.value(i)),
        DataType::LargeUtf8 => Value::from(array.as_string_opt::<i64>().ok_or_else(bad)?.value(i)),
        DataType::Utf8View => Value::from(array.as_string_view_opt().ok_or_else(bad)?.value(i)),
        DataType::Binary => bytes(array.as_binary_opt::<i32>().ok_or_else(bad)?.value(i)),
        DataType::LargeBinary => bytes(array.as_binary_opt::<i64>().ok_or_else(bad)?.value(i)),
        _ => return Ok(None),
    }))
}

/// A cell of a nested type (list, struct, map, dictionary); any other type is unsupported.
fn nested_cell(array: &dyn Array, i: usize) -> Result<Value, String> {
    let data_type = array.data_type();
    let bad = || mismatch(data_type);
    Ok(match data_type {
        DataType::List(_) => list(
            array
                .as_list_opt::<i32>()
                .ok_or_else(bad)?
                .value(i)
                .as_ref(),
        )?,
        DataType::LargeList(_) => list(
            array
                .as_list_opt::<i64>()
                .ok_or_else(bad)?
                .value(i)
                .as_ref(),
        )?,
        DataType::FixedSizeList(..) => list(
            array
                .as_fixed_size_list_opt()
                .ok_or_else(bad)?
                .value(i)
                .as_ref(),
        )?,
        DataType::Struct(fields) => {
            let strukt = array.as_struct_opt().ok_or_else(bad)?;
            let mut object = Map::new();
            for (field, column) in fields.iter().zip(strukt.columns()) {
                object.insert(field.name().clone(), cell(column.as_ref(), i)?);
            }
            Value::Object(object)
        }
        DataType::Map(..) => map_cell(array.as_map_opt().ok_or_else(bad)?.value(i))?,
        DataType::Dictionary(..) => {
            let dictionary = array.as_any_dictionary_opt().ok_or_else(bad)?;
            let key = dictionary.normalized_keys()[i];
            cell(dictionary.values().as_ref(), key)?
        }
        other => return Err(format!("unsupported Parquet column type {other}")),
    })
}

/// A map cell's entries as a JSON object; keys that are not strings become their JSON text.
fn map_cell(entries: StructArray) -> Result<Value, String> {
    let (keys, values) = (entries.column(0), entries.column(1));
    let mut object = Map::new();
    for j in 0..entries.len() {
        let key = match cell(keys.as_ref(), j)? {
            Value::String(s) => s,
            other => other.to_string(),
        };
        object.insert(key, cell(values.as_ref(), j)?);
    }
    Ok(Value::Object(object))
}

fn float(f: f64) -> Value {
    serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
}

/// Binary cells are text more often than not; keep them as strings when they are UTF-8.
fn bytes(b: &[u8]) -> Value {
    match std::str::from_utf8(b) {
        Ok(s) => Value::from(s),
        Err(_) => Value::Array(b.iter().map(|x| Value::from(*x)).collect()),
    }
}

fn list(values: &dyn Array) -> Result<Value, String> {
    (0..values.len())
        .map(|j| cell(values, j))
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}
